//! VUs run against the testkit's servers without the `pado` binary: a plan built
//! from a small scenario, one VU on a worker context of its own for a known number
//! of iterations, and what the worker sent (seconds, failure samples) compared with
//! what the server counted. Each protocol's finish path and the failure-sample key
//! are covered here, so a change to them does not wait for the end-to-end suite.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use pado_metrics::{CheckCounts, ErrorKind, FailureSample, ProtocolCounts, WorkerMessage};
use pado_metrics::{RequestSample, WsStats};
use pado_testkit::grpc::ECHO_PROTO;
use pado_testkit::h2server::{H2Options, H2Server};
use pado_testkit::{GrpcServer, Reflection, TestServer, WsServer};

use super::Vu;
use crate::plan::{compile, RunPlan};
use crate::runtime::worker::{FailureKey, Outlets, WorkerCtx};

/// One step's figures over the whole run, summed from the worker's seconds.
#[derive(Debug, Default)]
struct Step {
    requests: u64,
    failed: u64,
    check_failed: u64,
    status: BTreeMap<u16, u64>,
    errors: BTreeMap<&'static str, u64>,
    grpc_streams: u64,
    grpc_stream_msgs: u64,
    ws: Option<WsStats>,
}

/// What one VU's worker reported.
#[derive(Debug, Default)]
struct Ran {
    steps: BTreeMap<String, Step>,
    checks: BTreeMap<String, CheckCounts>,
    failures: Vec<FailureSample>,
    protocols: ProtocolCounts,
}

impl Ran {
    fn step(&self, name: &str) -> &Step {
        self.steps
            .get(name)
            .unwrap_or_else(|| panic!("no step {name} in {:?}", self.steps.keys()))
    }

    /// The failure samples of step `name`, by category.
    fn samples(&self, name: &str) -> BTreeMap<String, Vec<&FailureSample>> {
        let mut by = BTreeMap::<String, Vec<&FailureSample>>::new();
        for f in self.failures.iter().filter(|f| f.step == name) {
            by.entry(f.category.clone()).or_default().push(f);
        }
        by
    }

    /// Passes and fails of the one check whose name contains `part`.
    fn check(&self, part: &str) -> (u64, u64) {
        let found: Vec<_> = self
            .checks
            .iter()
            .filter(|(k, _)| k.contains(part))
            .collect();
        assert_eq!(found.len(), 1, "{part}: {:?}", self.checks.keys());
        (found[0].1.passes, found[0].1.fails)
    }
}

/// The plan of scenario `src`, files read from `dir`.
fn plan_in(src: &str, dir: &Path) -> Arc<RunPlan> {
    let cfg = pado_scenario::parse_str(src, "t.yaml").unwrap();
    Arc::new(compile(&cfg, dir).unwrap())
}

/// What a test's worker sends to: `tx` alone, no observer, no raw records.
fn outlets(tx: crossbeam_channel::Sender<WorkerMessage>) -> Outlets {
    Outlets {
        tx,
        observer: None,
        raw: None,
    }
}

/// Run `iterations` iterations of the first scenario's flow with one VU and sum
/// what its worker sent.
fn run_vu(plan: Arc<RunPlan>, iterations: u64) -> Ran {
    let (tx, rx) = crossbeam_channel::unbounded();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async {
        let ctx = WorkerCtx::new(0, plan.clone(), Instant::now(), outlets(tx), Vec::new());
        let sc = &plan.scenarios[0];
        let mut vu = Vu::new(ctx.clone(), 7, 1, sc.cookies);
        for _ in 0..iterations {
            vu.iteration(sc, 0, None).await;
        }
        ctx.finish();
    });
    let mut ran = Ran::default();
    for m in rx.try_iter() {
        match m {
            WorkerMessage::Interval(i) => {
                for s in i.series {
                    let st = ran.steps.entry(s.key.name.clone()).or_default();
                    st.requests += s.requests;
                    st.failed += s.failed;
                    st.check_failed += s.check_failed;
                    st.grpc_streams += s.grpc_streams;
                    st.grpc_stream_msgs += s.grpc_stream_msgs;
                    for (code, n) in s.status {
                        *st.status.entry(code).or_default() += n;
                    }
                    for (k, n) in ErrorKind::ALL.iter().zip(s.errors) {
                        if n > 0 {
                            *st.errors.entry(k.as_str()).or_default() += n;
                        }
                    }
                    if let Some(ws) = s.ws {
                        let w = st.ws.get_or_insert_with(WsStats::default);
                        w.sessions += ws.sessions;
                        w.failed += ws.failed;
                        w.msgs_sent += ws.msgs_sent;
                        w.msgs_received += ws.msgs_received;
                        w.errors.extend(ws.errors);
                    }
                }
                for (name, c) in i.checks {
                    let e = ran.checks.entry(name).or_default();
                    e.passes += c.passes;
                    e.fails += c.fails;
                }
                ran.protocols.requests_http1 += i.protocols.requests_http1;
                ran.protocols.requests_http2 += i.protocols.requests_http2;
                ran.protocols.conns_http1 += i.protocols.conns_http1;
                ran.protocols.conns_http2 += i.protocols.conns_http2;
            }
            WorkerMessage::Failures(f) => ran.failures.extend(f),
            WorkerMessage::Done { .. } => {}
        }
    }
    ran
}

fn scenario(target: &str, flow: &str) -> String {
    format!(
        "target: {target}\nscenarios:\n  s:\n    executor: per-vu-iterations\n    vus: 1\n    iterations: 1\n    flow:\n{flow}"
    )
}

#[test]
fn http1_requests_statuses_checks_and_failure_samples_are_what_the_server_saw() {
    let srv = TestServer::start();
    let flow = "      - { name: ok, request: /status/200, check: { status: 200 } }\n      - { name: bad, request: /status/503 }\n      - { name: checked, request: /, check: { body_contains: 채널 } }\n      - { name: cut, request: /reset }\n";
    let ran = run_vu(plan_in(&scenario(&srv.base_url(), flow), Path::new(".")), 5);
    let st = srv.stats();
    // Every request the server answered was recorded once, under its step. (A
    // reset on a kept-alive connection is sent once more on a fresh one, as a
    // closed idle connection may be: the server reads those twice.)
    let answered = st.requests - st.by_path["/reset"];
    let recorded: u64 = ran.steps.values().map(|s| s.requests).sum();
    assert_eq!(recorded - ran.step("cut").requests, answered, "{ran:?}");
    assert_eq!(st.by_path["/status/200"], 5);
    assert_eq!(st.by_path["/status/503"], 5);
    assert_eq!(st.by_path["/"], 5);
    assert!(st.by_path["/reset"] >= 5, "{st:?}");
    let ok = ran.step("ok");
    assert_eq!((ok.requests, ok.failed), (5, 0));
    assert_eq!(ok.status, BTreeMap::from([(200, 5)]));
    let bad = ran.step("bad");
    assert_eq!((bad.requests, bad.failed, bad.check_failed), (5, 5, 0));
    assert_eq!(bad.status, BTreeMap::from([(503, 5)]));
    let checked = ran.step("checked");
    assert_eq!((checked.failed, checked.check_failed), (5, 5));
    let cut = ran.step("cut");
    assert_eq!(cut.failed, 5);
    assert_eq!(cut.errors.values().sum::<u64>(), 5, "{cut:?}");
    assert_eq!(ran.check("status is 200"), (5, 0));
    assert_eq!(ran.check("채널"), (0, 5));
    // At most three samples per step and category, each saying why.
    assert!(ran.samples("ok").is_empty());
    let bad = ran.samples("bad");
    assert_eq!(bad.keys().collect::<Vec<_>>(), ["http_503"]);
    assert_eq!(bad["http_503"].len(), 3);
    // Bodies are shown printable: the newline as a backslash and `n`.
    assert!(bad["http_503"].iter().all(|f| f.status == 503
        && f.url == "/status/503"
        && f.body == "status 503\\n"
        && f.check.is_none()));
    let checked = ran.samples("checked");
    assert_eq!(checked["check_failed"].len(), 3, "{checked:?}");
    let f = checked["check_failed"][0];
    assert!(f.check.as_deref().unwrap().contains("채널"), "{f:?}");
    assert_eq!(f.actual.as_deref(), Some("not found in 3-byte body"));
    let cut_samples = ran.samples("cut");
    let (category, samples) = cut_samples.iter().next().unwrap();
    assert_eq!(cut_samples.len(), 1, "{cut_samples:?}");
    assert_eq!(samples.len(), 3);
    assert_eq!(
        ran.step("cut").errors.keys().collect::<Vec<_>>(),
        [category]
    );
}

#[test]
fn a_redirect_chain_is_one_sample_per_hop_and_one_judged_answer() {
    let srv = TestServer::start();
    let flow = "      - { name: hops, request: /redirect/2, check: { status: 200 } }\n";
    let ran = run_vu(plan_in(&scenario(&srv.base_url(), flow), Path::new(".")), 2);
    assert_eq!(srv.stats().requests, 6);
    let hops = ran.step("hops");
    assert_eq!(hops.requests, 6);
    assert_eq!(hops.status, BTreeMap::from([(200, 2), (302, 4)]));
    assert_eq!(hops.failed, 0);
    // Only the final answer is judged: two checks, not six.
    assert_eq!(ran.check("status is 200"), (2, 0));
}

/// A server on loopback that answers its first request with a redirect setting a
/// cookie and every later one with `200`, and hands over the head of the second
/// request it read (the hop).
fn cookie_redirect_server() -> (String, std::sync::mpsc::Receiver<String>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut seen = 0;
        for conn in listener.incoming() {
            let Ok(mut c) = conn else { return };
            c.set_read_timeout(Some(std::time::Duration::from_secs(5)))
                .unwrap();
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            loop {
                let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                    match c.read(&mut chunk) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                    continue;
                };
                let head: Vec<u8> = buf.drain(..end + 4).collect();
                seen += 1;
                let answer: &[u8] = if seen == 1 {
                    b"HTTP/1.1 302 Found\r\nSet-Cookie: sid=w1\r\nLocation: /next\r\nContent-Length: 0\r\n\r\n"
                } else {
                    let _ = tx.send(String::from_utf8_lossy(&head).into_owned());
                    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
                };
                if c.write_all(answer).is_err() {
                    break;
                }
            }
        }
    });
    (base, rx)
}

#[test]
fn a_cookie_set_by_a_followed_redirect_goes_with_the_next_hop() {
    let (base, hop) = cookie_redirect_server();
    let flow = "      - { name: login, request: /login, check: { status: 200 } }\n";
    let ran = run_vu(plan_in(&scenario(&base, flow), Path::new(".")), 1);
    let head = hop
        .recv_timeout(std::time::Duration::from_secs(5))
        .expect("the redirect was not followed");
    assert!(head.starts_with("GET /next HTTP/1.1\r\n"), "{head}");
    assert!(
        head.to_ascii_lowercase().contains("\r\ncookie: sid=w1\r\n"),
        "{head}"
    );
    let login = ran.step("login");
    assert_eq!(login.status, BTreeMap::from([(200, 1), (302, 1)]));
    assert_eq!((login.requests, login.failed), (2, 0));
    assert_eq!(ran.check("status is 200"), (1, 0));
}

#[test]
fn http2_requests_are_recorded_as_http2_and_a_refused_stream_is_a_failure() {
    let srv = H2Server::start(H2Options::default()).unwrap();
    let base = format!("http://{}", srv.addr);
    let src = format!(
        "target: {base}\ndefaults: {{ http: 2 }}\nscenarios:\n  s:\n    executor: per-vu-iterations\n    vus: 1\n    iterations: 1\n    flow:\n      - {{ name: get, request: /, check: {{ body_contains: ok }} }}\n      - {{ name: reset, request: /reset }}\n"
    );
    let ran = run_vu(plan_in(&src, Path::new(".")), 4);
    assert_eq!(srv.requests(), 8);
    let get = ran.step("get");
    assert_eq!((get.requests, get.failed), (4, 0));
    assert_eq!(get.status, BTreeMap::from([(200, 4)]));
    let reset = ran.step("reset");
    assert_eq!((reset.requests, reset.failed), (4, 4));
    assert_eq!(ran.protocols.requests_http2, 8, "{:?}", ran.protocols);
    assert_eq!(ran.protocols.requests_http1, 0);
    assert_eq!(ran.protocols.conns_http2, srv.connections());
    assert_eq!(ran.check("ok"), (4, 0));
    let samples = ran.samples("reset");
    assert_eq!(samples.len(), 1, "{samples:?}");
    assert_eq!(samples.values().next().unwrap().len(), 3);
}

#[test]
fn grpc_codes_streams_and_failure_samples_are_what_the_server_saw() {
    let srv = GrpcServer::start(Reflection::Off);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("echo.proto"), ECHO_PROTO).unwrap();
    let call = |name: &str, method: &str, message: &str, check: &str| {
        format!("      - name: {name}\n        grpc:\n          proto: [echo.proto]\n          method: pado.echo.Echo/{method}\n          message: {message}\n{check}")
    };
    let flow = [
        call(
            "echo",
            "Echo",
            "{ text: \"안녕 {{ vu }}\", n: 7 }",
            "        check: { grpc_status: OK, json: { \"$.text\": \"안녕 1\" } }\n",
        ),
        call("down", "Echo", "{ status: 14 }", ""),
        call("listen", "Stream", "{ text: s, count: 3 }", ""),
    ]
    .concat();
    let plan = plan_in(&scenario(&srv.base_url(), &flow), dir.path());
    let ran = run_vu(plan, 5);
    let st = srv.stats();
    assert_eq!((st.unary, st.unary_failed, st.streams), (10, 5, 5));
    let echo = ran.step("echo");
    assert_eq!((echo.requests, echo.failed), (5, 0));
    // The gRPC code is the request's status: 0 for OK, 14 for UNAVAILABLE.
    assert_eq!(echo.status, BTreeMap::from([(0, 5)]));
    assert_eq!(ran.check("OK"), (5, 0));
    assert_eq!(ran.check("$.text"), (5, 0));
    let down = ran.step("down");
    assert_eq!((down.requests, down.failed), (5, 5));
    // A code the step does not accept is a failure of its category (not a status).
    assert_eq!(down.errors, BTreeMap::from([("grpc_unavailable", 5)]));
    let listen = ran.step("listen");
    assert_eq!((listen.requests, listen.grpc_streams), (5, 5));
    assert_eq!(listen.grpc_stream_msgs, st.stream_msgs);
    assert_eq!(st.stream_msgs, 15);
    let samples = ran.samples("down");
    assert_eq!(samples.keys().collect::<Vec<_>>(), ["grpc_unavailable"]);
    assert_eq!(samples["grpc_unavailable"].len(), 3);
    let f = samples["grpc_unavailable"][0];
    assert_eq!((f.method.as_str(), f.status), ("POST", 14), "{f:?}");
    assert!(ran.samples("echo").is_empty() && ran.samples("listen").is_empty());
}

#[test]
fn websocket_messages_and_expects_are_what_the_server_saw() {
    let srv = WsServer::start();
    let flow = "      - name: chat\n        ws:\n          url: /echo\n          actions:\n            - send: '안녕 {{ vu }}'\n            - expect: { body_contains: '안녕 1', timeout: 2s }\n            - { send: ping, every: 10ms, count: 2 }\n            - hold: 50ms\n      - name: late\n        ws:\n          url: /echo?delay_ms=300\n          actions:\n            - send: two\n            - expect: { body_contains: two, timeout: 50ms }\n";
    let ran = run_vu(
        plan_in(&scenario(&srv.http_base_url(), flow), Path::new(".")),
        3,
    );
    let st = srv.stats();
    assert_eq!(st.sessions, 6);
    let chat = ran.step("chat").ws.as_ref().unwrap();
    let late = ran.step("late").ws.as_ref().unwrap();
    assert_eq!((chat.sessions, chat.failed), (3, 0));
    assert_eq!((late.sessions, late.failed), (3, 3));
    assert_eq!(late.errors, [("ws_expect_timeout".to_string(), 3)]);
    // Every message sent was read by the server; the echoes of `chat` all came back.
    assert_eq!(chat.msgs_sent + late.msgs_sent, st.received);
    assert_eq!(chat.msgs_sent, 9);
    assert_eq!(chat.msgs_received, 9);
    assert_eq!(ran.check("안녕 1"), (3, 0));
    assert_eq!(ran.check("two"), (0, 3));
}

fn failed(status: u16, error: Option<ErrorKind>) -> RequestSample {
    RequestSample {
        status,
        error,
        failed: true,
        ..RequestSample::default()
    }
}

#[test]
fn the_failure_key_tells_a_transport_a_status_and_a_check_apart() {
    let reset = failed(0, Some(ErrorKind::Reset));
    assert_eq!(
        FailureKey::of(&reset, true),
        FailureKey::Error(ErrorKind::Reset)
    );
    // A status and a transport kind never share a key, whatever their numbers.
    let index = ErrorKind::Reset.index() as u16;
    assert_ne!(
        FailureKey::of(&failed(1000 + index, None), true),
        FailureKey::of(&reset, true)
    );
    assert_eq!(
        FailureKey::of(&failed(503, None), true),
        FailureKey::Status(503)
    );
    assert_eq!(FailureKey::of(&failed(200, None), false), FailureKey::Check);
}

#[test]
fn each_step_keeps_at_most_three_samples_per_failure_key() {
    let plan = plan_in(
        &scenario("http://127.0.0.1:9", "      - request: /\n"),
        Path::new("."),
    );
    let (tx, _rx) = crossbeam_channel::unbounded();
    let ctx = WorkerCtx::new(0, plan, Instant::now(), outlets(tx), Vec::new());
    let keys = [
        FailureKey::Error(ErrorKind::Timeout),
        FailureKey::Error(ErrorKind::Reset),
        FailureKey::Status(500),
        FailureKey::Check,
    ];
    for step in [0, 1] {
        for key in keys {
            let taken = (0..5)
                .filter(|_| ctx.want_failure_sample(step, key))
                .count();
            assert_eq!(taken, 3, "{step} {key:?}");
        }
    }
}
