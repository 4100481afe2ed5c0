//! k6's tier-2 modules on pado (`k6/ws`, `k6/websockets`, `k6/net/grpc`,
//! `k6/experimental/fs` and `csv`): the scripts under `testdata/k6/tier2/` and
//! the corpus's `csv_users.js` (each names the k6 documentation page it comes
//! from) run unchanged against the test kit's WebSocket, gRPC and HTTP servers, which count what they receive. Message
//! counts and calls must equal the server's and what each script's logic implies;
//! where k6 is installed, k6 runs the same script against a fresh server and must
//! give the same figures (skipped with a message otherwise, unless
//! `PADO_E2E_REQUIRE_ALL=1`). k6 always runs with `K6_NO_USAGE_REPORT=true`.

use std::path::PathBuf;
use std::process::Command;

use pado_testkit::{GrpcServer, Reflection, TestServer, WsServer};
use serde_json::Value;

use crate::harness::{free_port, num, read_json, run, tmp, write_file};
use crate::k6_corpus::k6_or_skip;

/// A script of `testdata/k6/tier2/`.
fn script(name: &str) -> String {
    dir().join(name).to_string_lossy().into_owned()
}

/// A script of the k6 corpus (`testdata/k6/corpus/`).
fn corpus(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/e2e/testdata/k6/corpus")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/testdata/k6/tier2")
}

/// The test kit's `.proto` directory.
pub(crate) fn proto_dir() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("testing/testkit/proto")
        .to_string_lossy()
        .into_owned()
}

/// k6's figures for one run: its exit code and its summary export.
pub(crate) struct K6 {
    pub(crate) exit: i32,
    pub(crate) export: Value,
    /// What k6 wrote to stderr (its log), shown when a figure differs.
    pub(crate) log: String,
}

impl K6 {
    /// Passes and fails of the `checks` metric.
    pub(crate) fn checks(&self) -> (u64, u64) {
        let c = &self.export["metrics"]["checks"];
        (
            c["passes"].as_f64().unwrap_or(0.0) as u64,
            c["fails"].as_f64().unwrap_or(0.0) as u64,
        )
    }

    /// A counter's count (0 when k6 did not report it).
    pub(crate) fn count(&self, metric: &str) -> u64 {
        self.export["metrics"][metric]["count"]
            .as_f64()
            .unwrap_or(0.0) as u64
    }
}

/// Run `script` with k6 (`env` as `-e`), or `None` when k6 is not installed.
pub(crate) fn run_k6(name: &str, env: &[(&str, String)]) -> Option<K6> {
    let k6 = k6_or_skip()?;
    let work = tmp("k6-tier2");
    let export = work.join("export.json");
    let mut cmd = Command::new(k6);
    cmd.current_dir(&*work)
        .env("K6_NO_USAGE_REPORT", "true")
        .args(["run", "--quiet", "--no-color", "--summary-export"])
        .arg(&export);
    for (k, v) in env {
        cmd.args(["-e", &format!("{k}={v}")]);
    }
    let path = if dir().join(name).is_file() {
        script(name)
    } else {
        corpus(name)
    };
    let out = cmd.arg(path).output().expect("running k6");
    let exit = out.status.code().unwrap_or(-1);
    assert!(
        export.is_file(),
        "k6 wrote no summary: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(K6 {
        exit,
        export: read_json(&export),
        log: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// Every check of pado's summary: (passes, fails) summed.
pub(crate) fn checks(s: &Value) -> (u64, u64) {
    let mut p = 0;
    let mut f = 0;
    for (_, c) in s["checks"].as_object().into_iter().flatten() {
        p += c["passes"].as_f64().unwrap_or(0.0) as u64;
        f += c["fails"].as_f64().unwrap_or(0.0) as u64;
    }
    (p, f)
}

fn env_args(env: &[(&str, String)]) -> Vec<String> {
    env.iter()
        .flat_map(|(k, v)| ["-e".to_string(), format!("{k}={v}")])
        .collect()
}

pub(crate) fn pado_run(name: &str, env: &[(&str, String)]) -> crate::harness::Run {
    let s = if dir().join(name).is_file() {
        script(name)
    } else {
        corpus(name)
    };
    let args = env_args(env);
    let mut all: Vec<&str> = vec![&s];
    all.extend(args.iter().map(String::as_str));
    run(&format!("k6-{}", name.trim_end_matches(".js")), &all)
}

#[test]
fn k6_ws_echo_counts_equal_the_servers_and_k6s() {
    let srv = WsServer::start();
    let env = [("WS_URL", srv.base_url())];
    let r = pado_run("ws_echo.js", &env);
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    let s = r.summary();
    let st = srv.stats();
    // 4 iterations, each a session of 5 messages each way.
    assert_eq!(st.sessions, 4, "{st:?}");
    assert_eq!((st.received, st.sent), (20, 20), "{st:?}");
    let ws = &s["websocket"];
    assert_eq!(num(ws, "sessions") as u64, st.sessions, "{ws:#}");
    assert_eq!(num(ws, "failed"), 0.0, "{ws:#}");
    assert_eq!(num(ws, "msgs_sent") as u64, st.received, "{ws:#}");
    assert_eq!(num(ws, "msgs_received") as u64, st.sent, "{ws:#}");
    let c = &s["checks"];
    assert_eq!(num(&c["echo is the Hangul sent"], "passes"), 20.0, "{c:#}");
    assert_eq!(num(&c["status is 101"], "passes"), 4.0, "{c:#}");
    assert_eq!(checks(&s), (24, 0));
    assert_eq!(num(&s, "iterations"), 4.0);
    // k6 on the same script against a fresh server: the same figures.
    let srv = WsServer::start();
    let Some(k6) = run_k6("ws_echo.js", &[("WS_URL", srv.base_url())]) else {
        return;
    };
    let st = srv.stats();
    assert_eq!(k6.exit, 0, "{}", k6.log);
    assert_eq!((st.sessions, st.received, st.sent), (4, 20, 20), "{st:?}");
    assert_eq!(k6.count("ws_sessions"), 4);
    assert_eq!(k6.count("ws_msgs_sent"), 20);
    assert_eq!(k6.count("ws_msgs_received"), 20);
    assert_eq!(k6.checks(), checks(&s));
}

#[test]
fn k6_websockets_chat_ends_each_iteration_when_its_socket_closes_as_k6() {
    let srv = WsServer::start();
    let env = [("WS_URL", srv.base_url())];
    let r = pado_run("websockets_chat.js", &env);
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    let s = r.summary();
    let st = srv.stats();
    // Each of 4 sessions: join + 2 messages in, joined + 2 echoes out.
    assert_eq!((st.sessions, st.received, st.sent), (4, 12, 12), "{st:?}");
    let ws = &s["websocket"];
    assert_eq!(num(ws, "sessions"), 4.0, "{ws:#}");
    assert_eq!(num(ws, "msgs_sent"), 12.0, "{ws:#}");
    assert_eq!(num(ws, "msgs_received"), 12.0, "{ws:#}");
    let c = &s["checks"];
    assert_eq!(num(&c["joined with an id"], "passes"), 4.0, "{c:#}");
    assert_eq!(num(&c["said back"], "passes"), 8.0, "{c:#}");
    assert_eq!(
        num(&c["three answers before close"], "passes"),
        4.0,
        "{c:#}"
    );
    assert_eq!(checks(&s), (16, 0));
    let srv = WsServer::start();
    let Some(k6) = run_k6("websockets_chat.js", &[("WS_URL", srv.base_url())]) else {
        return;
    };
    let st = srv.stats();
    assert_eq!(k6.exit, 0, "{}", k6.log);
    assert_eq!((st.sessions, st.received, st.sent), (4, 12, 12), "{st:?}");
    assert_eq!(k6.count("ws_sessions"), 4);
    assert_eq!(k6.checks(), checks(&s));
}

#[test]
fn k6_grpc_unary_calls_equal_the_servers_and_k6s() {
    let srv = GrpcServer::start(Reflection::Off);
    let addr = srv.base_url().trim_start_matches("http://").to_string();
    let env = [("GRPC_ADDR", addr), ("PROTO_DIR", proto_dir())];
    let r = pado_run("grpc_echo.js", &env);
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    let s = r.summary();
    let st = srv.stats();
    // 6 iterations, two calls each, one of them failing on request.
    assert_eq!((st.unary, st.unary_failed), (12, 6), "{st:?}");
    assert_eq!(num(&s, "requests") as u64, st.unary, "{s:#}");
    let c = &s["checks"];
    for name in ["status is OK", "text echoed", "metadata reached the server"] {
        assert_eq!(num(&c[name], "passes"), 6.0, "{name}: {c:#}");
    }
    assert_eq!(num(&c["NotFound on request"], "passes"), 6.0, "{c:#}");
    assert_eq!(checks(&s), (24, 0));
    // The failing call (NotFound) is counted as a failure, category `grpc_status`.
    let step = &s["steps"]["/pado.echo.Echo/Echo"];
    assert_eq!(num(step, "requests"), 12.0, "{:#}", s["steps"]);
    assert_eq!(num(step, "errors.grpc_status"), 6.0, "{step:#}");
    let srv = GrpcServer::start(Reflection::Off);
    let addr = srv.base_url().trim_start_matches("http://").to_string();
    let Some(k6) = run_k6(
        "grpc_echo.js",
        &[("GRPC_ADDR", addr), ("PROTO_DIR", proto_dir())],
    ) else {
        return;
    };
    let st = srv.stats();
    assert_eq!(k6.exit, 0, "{}", k6.log);
    assert_eq!((st.unary, st.unary_failed), (12, 6), "{st:?} {}", k6.log);
    // (k6 reports calls only as the trend `grpc_req_duration`, whose export has
    // no count: the server's count is k6's figure here.)
    assert_eq!(k6.checks(), checks(&s));
}

#[test]
fn k6_grpc_server_streams_deliver_every_reply_as_k6() {
    let srv = GrpcServer::start(Reflection::Off);
    let addr = srv.base_url().trim_start_matches("http://").to_string();
    let env = [("GRPC_ADDR", addr), ("PROTO_DIR", proto_dir())];
    let r = pado_run("grpc_stream.js", &env);
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    let s = r.summary();
    let st = srv.stats();
    // 2 iterations, one stream of 3 replies each.
    assert_eq!((st.streams, st.stream_msgs), (2, 6), "{st:?}");
    let step = &s["steps"]["/pado.echo.Echo/Stream"];
    assert_eq!(num(step, "grpc.streams"), 2.0, "{step:#}");
    assert_eq!(num(step, "grpc.stream_msgs"), 6.0, "{step:#}");
    let c = &s["checks"];
    assert_eq!(num(&c["text streamed"], "passes"), 6.0, "{c:#}");
    assert_eq!(num(&c["three replies"], "passes"), 2.0, "{c:#}");
    assert_eq!(checks(&s), (8, 0));
    let srv = GrpcServer::start(Reflection::Off);
    let addr = srv.base_url().trim_start_matches("http://").to_string();
    let Some(k6) = run_k6(
        "grpc_stream.js",
        &[("GRPC_ADDR", addr), ("PROTO_DIR", proto_dir())],
    ) else {
        return;
    };
    let st = srv.stats();
    assert_eq!(k6.exit, 0, "{}", k6.log);
    assert_eq!((st.streams, st.stream_msgs), (2, 6), "{st:?} {}", k6.log);
    assert_eq!(k6.count("grpc_streams"), 2);
    assert_eq!(k6.count("grpc_streams_msgs_received"), 6);
    assert_eq!(k6.checks(), checks(&s));
}

#[test]
fn k6_csv_rows_reach_the_server_with_hangul_intact_as_k6() {
    let srv = TestServer::start();
    let env = [("BASE_URL", srv.base_url())];
    let r = pado_run("csv_users.js", &env);
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    let s = r.summary();
    let bodies: Vec<Value> = srv
        .records()
        .iter()
        .filter(|x| x.path == "/echo")
        .map(|x| serde_json::from_slice(&x.body).unwrap())
        .collect();
    let names: Vec<&str> = bodies.iter().map(|b| b["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["김파도", "이바다", "Lee"]);
    assert_eq!(bodies[1]["city"], "Busan, KR", "a quoted comma kept");
    assert_eq!(checks(&s), (9, 0));
    let srv = TestServer::start();
    let Some(k6) = run_k6("csv_users.js", &[("BASE_URL", srv.base_url())]) else {
        return;
    };
    assert_eq!(k6.exit, 0, "{}", k6.log);
    assert_eq!(srv.records().len(), 3);
    assert_eq!(k6.checks(), checks(&s));
}

#[test]
fn a_proto_that_does_not_compile_stops_the_run_at_start_naming_its_line() {
    let r = run("k6-broken-proto", &[&script("broken_proto.js")]);
    assert_eq!(r.code(), 107, "{}", r.stderr());
    let e = r.stderr();
    assert!(e.contains("broken.proto:5:"), "{e}");
    assert!(e.contains("broken_proto.js:5"), "the script's line: {e}");
}

#[test]
fn a_refused_handshake_is_a_response_with_an_error_and_the_run_goes_on() {
    let srv = WsServer::start();
    let nobody = format!("ws://127.0.0.1:{}", free_port());
    let env = [("WS_URL", srv.base_url()), ("NOBODY_URL", nobody.clone())];
    let r = pado_run("ws_refused.js", &env);
    let s = r.summary();
    assert_eq!(srv.stats().refused, 2);
    let ws = &s["websocket"];
    // 2 iterations × (a refused handshake + a refused connection), all failed.
    assert_eq!(num(ws, "sessions"), 4.0, "{ws:#}");
    assert_eq!(num(ws, "failed"), 4.0, "{ws:#}");
    assert_eq!(checks(&s), (8, 0), "{:#}\n{}", s["checks"], r.stderr());
    assert_eq!(
        num(&s["checks"]["the refusal's body, as k6"], "passes"),
        2.0,
        "{:#}",
        s["checks"]
    );
    assert_eq!(num(&s, "iterations"), 2.0);
    let srv = WsServer::start();
    let Some(k6) = run_k6(
        "ws_refused.js",
        &[("WS_URL", srv.base_url()), ("NOBODY_URL", nobody)],
    ) else {
        return;
    };
    assert_eq!(srv.stats().refused, 2);
    assert_eq!(k6.checks(), checks(&s));
}

#[test]
fn a_socket_that_never_closes_ends_with_the_run_and_every_message_is_counted() {
    // The server pushes a tick every 20 ms and the script never closes: the
    // run's end (gracefulStop 0s) cuts the iteration, and the session is
    // recorded with every message it read.
    let srv = WsServer::start();
    let t = tmp("k6-ws-forever");
    let src = "import { WebSocket } from 'k6/websockets';\n\
export const options = { scenarios: { s: { executor: 'constant-vus', vus: 2, duration: '1s', gracefulStop: '0s' } } };\n\
export default function () {\n\
  const ws = new WebSocket(`${__ENV.WS_URL}/?push_ms=20`);\n\
  ws.onmessage = () => {};\n\
}\n";
    let f = write_file(&t, "forever.js", src);
    let started = std::time::Instant::now();
    let r = run(
        "k6-ws-forever",
        &[
            f.to_str().unwrap(),
            "-e",
            &format!("WS_URL={}", srv.base_url()),
        ],
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(15),
        "the run did not end with its duration"
    );
    let s = r.summary();
    let st = srv.stats();
    let ws = &s["websocket"];
    assert_eq!(st.sessions, 2, "{st:?}");
    assert_eq!(num(ws, "sessions"), 2.0, "{ws:#}");
    assert!(st.sent >= 10, "{st:?}");
    // Every tick pado read was one the server wrote (a tick still in flight at
    // the cut may be unread).
    let got = num(ws, "msgs_received") as u64;
    assert!(got <= st.sent && got + 2 >= st.sent, "{got} of {st:?}");
}

#[test]
fn k6_ws_ping_times_each_pong_and_its_threshold_is_judged_as_k6s() {
    let srv = WsServer::start();
    let env = [("WS_URL", srv.base_url())];
    let r = pado_run("ws_ping.js", &env);
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    let s = r.summary();
    // 2 sessions × 3 pings, each answered: six values, none longer than the
    // session that held it.
    let ping = &s["custom"]["ws_ping"];
    let mut count = 0.0;
    for line in r.timeline() {
        for m in line["custom"].as_array().into_iter().flatten() {
            if m["name"] == "ws_ping" {
                count += num(m, "count");
            }
        }
    }
    assert_eq!(count, 6.0, "{:#}", s["custom"]);
    assert_eq!(ping["kind"], "trend");
    assert_eq!(ping["time"], true);
    let longest = num(&s["websocket"], "session_duration_ms.max");
    let max = num(ping, "values.max");
    assert!(
        max > 0.0 && max <= longest,
        "ws_ping max {max} ms, session {longest} ms"
    );
    assert_eq!(checks(&s), (4, 0), "{:#}", s["checks"]);
    // A rule that must fail: the threshold sees ws_ping (k6's exit code 99).
    let failing = [("WS_URL", srv.base_url()), ("PING_RULE", "max<0".into())];
    let bad = pado_run("ws_ping.js", &failing);
    assert_eq!(bad.code(), 99, "{}\n{}", bad.stdout(), bad.stderr());
    let srv = WsServer::start();
    let Some(k6) = run_k6("ws_ping.js", &[("WS_URL", srv.base_url())]) else {
        return;
    };
    assert_eq!(k6.exit, 0, "{}", k6.log);
    assert!(
        k6.export["metrics"]["ws_ping"]["max"].as_f64().is_some(),
        "{:#}",
        k6.export["metrics"]
    );
    assert_eq!(k6.checks(), checks(&s));
}

#[test]
fn http_debug_shows_a_scripts_websocket_handshake_and_grpc_call_with_credentials_masked() {
    let ws = WsServer::start();
    let grpc = GrpcServer::start(Reflection::Off);
    let out = crate::harness::pado_cmd(["run", &script("net_debug.js"), "--once", "--http-debug"])
        .args(env_args(&[
            ("WS_URL", ws.base_url()),
            ("GRPC_ADDR", grpc.addr()),
            ("PROTO_DIR", proto_dir()),
        ]))
        .output()
        .expect("running pado");
    let both = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{both}");
    assert_eq!((ws.stats().sessions, grpc.stats().unary), (1, 1));
    // The handshake: its URL (Hangul intact), its status, the messages counted.
    assert!(both.contains("WS ws://127.0.0.1:"), "{both}");
    assert!(both.contains("room=파도"), "{both}");
    assert!(both.contains("101"), "{both}");
    assert!(both.contains("1 sent, 1 received"), "{both}");
    // The call: its method, its status and the server's header.
    assert!(both.contains("/pado.echo.Echo/Echo"), "{both}");
    assert!(both.contains("grpc-status: 0 OK"), "{both}");
    assert!(both.contains("x-served-by: pado-testkit"), "{both}");
    assert!(both.contains("x-tag: k6"), "{both}");
    // Credentials masked, in both.
    assert!(!both.contains("s3cret"), "a credential shows: {both}");
    assert!(both.matches(": ***").count() >= 2, "{both}");
}
