//! gRPC steps against the test kit's tonic server (`echo.proto`): unary and
//! streaming counts equal the server's own, status codes land in their categories
//! or are accepted by `grpc_status`, the server's delay shows in the latency, the
//! server's reflection service stands in for the `.proto` file, and a bad `.proto`
//! or method is an error naming its place.

use pado_testkit::grpc::ECHO_PROTO;
use pado_testkit::{GrpcServer, Reflection};

use crate::harness::{num, pado, run, run_timed, tmp, write_file, write_fixture};

#[test]
fn grpc_unary_and_stream_counts_equal_the_servers() {
    let srv = GrpcServer::start(Reflection::Off);
    let t = tmp("grpc-counts");
    write_file(&t, "echo.proto", ECHO_PROTO);
    let file = write_fixture(
        &t,
        "grpc_grpc_unary_and_stream_counts_equal_the_servers.yaml",
        "g.yaml",
        &[("target", srv.base_url())],
    );
    let r = run(
        "grpc-counts",
        &[
            file.to_str().unwrap(),
            "--threshold",
            "grpc_req_duration: max < 60000",
            "--threshold",
            "grpc_streams: count > 0",
            "--threshold",
            "grpc_streams_msgs_received: count > 0",
        ],
    );
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    let s = r.summary();
    let st = srv.stats();
    // k6's gRPC names read the calls: the stream counts are the server's own.
    let th = s["thresholds"].as_array().unwrap();
    assert_eq!(th.len(), 3, "{th:#?}");
    assert!(th.iter().all(|t| t["ok"] == true), "{th:#?}");
    assert_eq!(num(&th[1], "value") as u64, st.streams, "{th:#?}");
    assert_eq!(num(&th[2], "value") as u64, st.stream_msgs, "{th:#?}");
    assert!(r.stdout().contains("  grpc "), "{}", r.stdout());
    let echo = &s["steps"]["echo"];
    let stream = &s["steps"]["stream"];
    assert!(st.unary >= 2, "{st:?}");
    assert_eq!(num(echo, "requests") as u64, st.unary, "{echo:#}");
    assert_eq!(num(echo, "failed"), 0.0, "{echo:#}");
    assert_eq!(num(echo, "grpc.status.0") as u64, st.unary, "{echo:#}");
    assert_eq!(num(stream, "requests") as u64, st.streams, "{stream:#}");
    assert_eq!(num(stream, "grpc.streams") as u64, st.streams, "{stream:#}");
    assert_eq!(num(stream, "grpc.stream_msgs") as u64, st.stream_msgs);
    assert_eq!(st.stream_msgs, 5 * st.streams, "{st:?}");
    assert_eq!(num(stream, "failed"), 0.0, "{stream:#}");
    // Every check passed on every call: the reply was decoded and the extracted
    // text went into the stream's request.
    for (name, c) in s["checks"].as_object().unwrap() {
        assert_eq!(num(c, "fails"), 0.0, "{name}: {c:#}");
        assert!(num(c, "passes") >= 1.0, "{name}: {c:#}");
    }
    assert_eq!(
        num(&s, "checks.echo: grpc_status is OK.passes") as u64,
        st.unary
    );
}

#[test]
fn grpc_statuses_are_failures_by_category_unless_accepted() {
    let srv = GrpcServer::start(Reflection::Off);
    let t = tmp("grpc-status");
    write_file(&t, "echo.proto", ECHO_PROTO);
    let step = |name: &str, status: u32, check: &str| {
        format!(
            "      - name: {name}\n        grpc:\n          proto: [echo.proto]\n          method: pado.echo.Echo/Echo\n          message: {{ status: {status} }}\n{check}"
        )
    };
    let flow = [
        step("down", 14, ""),
        step("bad", 3, ""),
        step(
            "missing",
            5,
            "        check: { grpc_status: [NOT_FOUND, 0] }\n",
        ),
        step("late", 4, ""),
    ]
    .concat();
    let file = write_fixture(
        &t,
        "grpc_one_vu_for_1s.yaml",
        "g.yaml",
        &[("target", srv.base_url()), ("flow", flow.to_string())],
    );
    let r = run("grpc-status", &[file.to_str().unwrap()]);
    let s = r.summary();
    let st = srv.stats();
    let steps = &s["steps"];
    let n = num(&steps["down"], "requests");
    assert!(n >= 1.0, "{s:#}");
    assert_eq!(
        num(&steps["down"], "errors.grpc_unavailable"),
        n,
        "{steps:#}"
    );
    assert_eq!(
        num(&steps["bad"], "errors.grpc_status"),
        num(&steps["bad"], "requests")
    );
    assert_eq!(
        num(&steps["late"], "errors.grpc_deadline_exceeded"),
        num(&steps["late"], "requests")
    );
    // Accepted: not a failure, counted under its code.
    let missing = &steps["missing"];
    assert_eq!(num(missing, "failed"), 0.0, "{missing:#}");
    assert_eq!(num(missing, "grpc.status.5"), num(missing, "requests"));
    let total: f64 = ["down", "bad", "missing", "late"]
        .iter()
        .map(|k| num(&steps[*k], "requests"))
        .sum();
    assert_eq!(total as u64, st.unary_failed, "{st:?}");
    assert_eq!(st.unary, st.unary_failed);
    // A failure sample names the code.
    let failures = std::fs::read_to_string(r.dir.join("failures.jsonl")).unwrap();
    assert!(failures.contains("UNAVAILABLE"), "{failures}");
}

#[test]
fn grpc_latency_carries_the_servers_delay() {
    let srv = GrpcServer::start(Reflection::Off);
    let t = tmp("grpc-delay");
    write_file(&t, "echo.proto", ECHO_PROTO);
    let file = write_fixture(
        &t,
        "grpc_grpc_latency_carries_the_servers_delay.yaml",
        "g.yaml",
        &[("target", srv.base_url())],
    );
    run_timed("grpc-delay", &[file.to_str().unwrap()], |r| {
        let s = r.summary();
        let lat = &s["steps"]["slow"]["latency_ms"];
        let (min, p50) = (num(lat, "min"), num(lat, "p50"));
        assert!(min >= 39.95, "{lat:#}");
        if (40.0..60.0).contains(&p50) {
            Ok(())
        } else {
            Err(format!("p50 = {p50:.2} ms, outside 40..60"))
        }
    });
}

#[test]
fn grpc_reflection_stands_in_for_the_proto_file() {
    for reflection in [Reflection::V1, Reflection::V1Alpha] {
        let srv = GrpcServer::start(reflection);
        let t = tmp("grpc-refl");
        let file = write_fixture(
            &t,
            "grpc_grpc_reflection_stands_in_for_the_proto_file.yaml",
            "g.yaml",
            &[("target", srv.base_url())],
        );
        let r = run("grpc-refl", &[file.to_str().unwrap()]);
        assert_eq!(
            r.code(),
            0,
            "{reflection:?}: {}\n{}",
            r.stdout(),
            r.stderr()
        );
        let s = r.summary();
        let st = srv.stats();
        assert!(st.reflection >= 1, "{reflection:?}: {st:?}");
        assert_eq!(num(&s, "steps.echo.requests") as u64, st.unary);
        assert_eq!(num(&s, "steps.echo.failed"), 0.0);
    }
    // No reflection and no proto: a clear error before any load.
    let srv = GrpcServer::start(Reflection::Off);
    let t = tmp("grpc-norefl");
    let file = write_fixture(
        &t,
        "grpc_no_reflection_and_no_proto.yaml",
        "g.yaml",
        &[("target", srv.base_url())],
    );
    let o = pado(&["validate", file.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("g.yaml:9:") && err.contains("reflection"),
        "{err}"
    );
    assert_eq!(srv.stats().unary, 0);
}

#[test]
fn grpc_bad_proto_method_or_message_is_named_with_its_place() {
    let srv = GrpcServer::start(Reflection::Off);
    let t = tmp("grpc-bad");
    write_file(&t, "echo.proto", ECHO_PROTO);
    write_file(
        &t,
        "bad.proto",
        "syntax = \"proto3\";\npackage b;\nmessage M {\n  strng name = 1;\n}\n",
    );
    let cases = [
        (
            "proto: [bad.proto]\n          method: b.S/Call",
            "bad.proto:4:",
        ),
        (
            "proto: [echo.proto]\n          method: pado.echo.Echo/Nope",
            "has no method `Nope`",
        ),
        (
            "proto: [echo.proto]\n          method: pado.echo.Echo/Echo\n          message: { txet: hi }",
            "no field `txet`",
        ),
        (
            "proto: [echo.proto]\n          method: pado.echo.Echo/Echo\n          message: { delay_ms: soon }",
            "does not fit",
        ),
        ("method: nonsense", "is not a gRPC method"),
    ];
    for (grpc, want) in cases {
        let flow = format!("      - name: x\n        grpc:\n          {grpc}\n");
        let file = write_fixture(
            &t,
            "grpc_grpc_bad_proto_method_or_message_is_named_with_its_place.yaml",
            "g.yaml",
            &[("target", srv.base_url()), ("flow", flow.to_string())],
        );
        let o = pado(&["validate", file.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{grpc}");
        assert!(err.contains(want), "{grpc}: {err}");
        assert!(err.contains("g.yaml:1"), "{grpc}: no line: {err}");
    }
    assert_eq!(srv.stats().unary, 0);
}

/// A server that answers a call as if it succeeded (HTTP 200, a message) but sends
/// no `grpc-status`, neither in trailers nor in the head: gRPC's clients count such
/// a call as INTERNAL (grpc-go: "server closed the stream without sending
/// trailers"), so `grpc_status: OK` must fail it, every call counted as `protocol`
/// with its reason. The test kit's gRPC server, answering with a status, is the
/// control: the same step passes there.
#[test]
fn a_grpc_answer_without_grpc_status_is_not_ok() {
    use pado_testkit::h2server::{H2Options, H2Server};
    let liar = H2Server::start(H2Options::default()).unwrap();
    let honest = GrpcServer::start(Reflection::Off);
    let t = tmp("grpc-no-status");
    write_file(&t, "echo.proto", ECHO_PROTO);
    let step = |name: &str, target: &str, lie: &str| {
        format!(
            "      - name: {name}\n        grpc:\n          url: {target}\n          proto: [echo.proto]\n          method: pado.echo.Echo/Echo\n          message: {{ text: \"파도\" }}\n          metadata: {{ x-lie: \"{lie}\" }}\n        check: {{ grpc_status: OK }}\n"
        )
    };
    let liar_url = format!("http://{}", liar.addr);
    let flow = [
        step("no_trailers", &liar_url, "data"),
        step("head_only", &liar_url, "head"),
        step("honest", &honest.base_url(), "data"),
    ]
    .concat();
    let file = write_fixture(
        &t,
        "grpc_one_vu_for_1s.yaml",
        "g.yaml",
        &[("target", honest.base_url()), ("flow", flow.to_string())],
    );
    let r = run("grpc-no-status", &[file.to_str().unwrap()]);
    let s = r.summary();
    let steps = &s["steps"];
    let lied = num(&steps["no_trailers"], "requests") + num(&steps["head_only"], "requests");
    assert!(num(&steps["head_only"], "requests") >= 1.0, "{steps:#}");
    assert_eq!(lied as u64, liar.requests(), "{steps:#}");
    for k in ["no_trailers", "head_only"] {
        let st = &steps[k];
        assert_eq!(num(st, "failed"), num(st, "requests"), "{k}: {st:#}");
        assert_eq!(
            num(st, "errors.protocol"),
            num(st, "requests"),
            "{k}: {st:#}"
        );
        assert_eq!(
            st["grpc"]["status"]["0"].as_f64().unwrap_or(0.0),
            0.0,
            "{k}: {st:#}"
        );
        assert_eq!(
            num(&s, &format!("checks.{k}: grpc_status is OK.passes")),
            0.0,
            "{:#}",
            s["checks"]
        );
    }
    // The control: a server that sends its status passes the same check.
    let h = &steps["honest"];
    assert_eq!(num(h, "failed"), 0.0, "{h:#}");
    assert_eq!(num(h, "grpc.status.0"), num(h, "requests"), "{h:#}");
    let failures = std::fs::read_to_string(r.dir.join("failures.jsonl")).unwrap();
    assert!(failures.contains("no grpc-status"), "{failures}");
    // `--once` shows the fault on each lying call, and the honest one passing;
    // `--http-debug` shows the code gRPC counts (it used to print `0 OK`).
    let out = pado(&["run", file.to_str().unwrap(), "--once", "--http-debug"]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{text}");
    for k in ["✗ no_trailers", "✗ head_only", "✓ honest → 0"] {
        assert!(text.contains(k), "{k}: {text}");
    }
    let shown: Vec<&str> = text.split("--- calls · ").skip(1).collect();
    assert_eq!(shown.len(), 3, "{text}");
    for call in shown {
        let honest = call.starts_with("honest");
        assert_eq!(call.contains("grpc-status: 0 OK"), honest, "{call}");
        assert_eq!(call.contains("grpc-status: 13 INTERNAL"), !honest, "{call}");
        assert_eq!(call.contains("sent no grpc-status"), !honest, "{call}");
    }
}
