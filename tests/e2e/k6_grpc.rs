//! k6's `k6/net/grpc` beyond unary calls and server streams: client and
//! bidirectional streams, reflection, TLS on `connect()`, and a reply's headers,
//! trailers and status message. The scripts under `testdata/k6/tier2/grpc_*.js`
//! (each names the k6 documentation page it comes from) run unchanged against
//! the test kit's gRPC server, which counts the calls and messages it gets; the
//! counts must equal the server's and what each script's logic implies, and,
//! where k6 is installed, k6 runs the same script against a fresh server and
//! must give the same figures (skipped with a message otherwise, unless
//! `PADO_E2E_REQUIRE_ALL=1`). k6 always runs with `K6_NO_USAGE_REPORT=true`.

use pado_testkit::{
    client_pki, GrpcOptions, GrpcServer, GrpcStats, Reflection, ECHO_DESCRIPTOR_SET,
};

use crate::harness::{num, require_or_skip, tmp, write_file};
use crate::k6_tier2::{checks, pado_run, proto_dir, run_k6};

/// The script's environment for a plain-text server.
fn env_of(srv: &GrpcServer) -> Vec<(&'static str, String)> {
    vec![("GRPC_ADDR", srv.addr()), ("PROTO_DIR", proto_dir())]
}

/// What `grpc_client_bidi.js` makes a server count: 3 iterations, each a
/// client stream of 4 messages, a bidirectional one of 5 and a ping-pong of 3.
fn bidi_truth(st: &GrpcStats) {
    assert_eq!((st.collects, st.collect_msgs), (3, 12), "{st:?}");
    assert_eq!(st.chats, 6, "{st:?}");
    assert_eq!((st.chat_msgs_in, st.chat_msgs_out), (24, 24), "{st:?}");
}

#[test]
fn k6_client_and_bidirectional_streams_equal_the_servers_and_k6s() {
    let srv = GrpcServer::start(Reflection::Off);
    let r = pado_run("grpc_client_bidi.js", &env_of(&srv));
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    let s = r.summary();
    bidi_truth(&srv.stats());
    let collect = &s["steps"]["/pado.echo.Echo/Collect"];
    assert_eq!(num(collect, "requests"), 3.0, "{:#}", s["steps"]);
    assert_eq!(num(collect, "grpc.streams"), 3.0, "{collect:#}");
    assert_eq!(num(collect, "grpc.stream_msgs"), 3.0, "{collect:#}");
    assert_eq!(num(collect, "grpc.stream_msgs_sent"), 12.0, "{collect:#}");
    let chat = &s["steps"]["/pado.echo.Echo/Chat"];
    assert_eq!(num(chat, "grpc.streams"), 6.0, "{chat:#}");
    assert_eq!(num(chat, "grpc.stream_msgs"), 24.0, "{chat:#}");
    assert_eq!(num(chat, "grpc.stream_msgs_sent"), 24.0, "{chat:#}");
    let c = &s["checks"];
    assert_eq!(num(&c["collected in order"], "passes"), 3.0, "{c:#}");
    assert_eq!(num(&c["echo in its place"], "passes"), 15.0, "{c:#}");
    assert_eq!(num(&c["five echoes"], "passes"), 3.0, "{c:#}");
    assert_eq!(num(&c["three rounds"], "passes"), 3.0, "{c:#}");
    assert_eq!(checks(&s), (24, 0));
    let srv = GrpcServer::start(Reflection::Off);
    let Some(k6) = run_k6("grpc_client_bidi.js", &env_of(&srv)) else {
        return;
    };
    assert_eq!(k6.exit, 0, "{}", k6.log);
    bidi_truth(&srv.stats());
    assert_eq!(k6.count("grpc_streams"), 9, "{}", k6.log);
    assert_eq!(k6.count("grpc_streams_msgs_sent"), 36);
    assert_eq!(k6.count("grpc_streams_msgs_received"), 27);
    assert_eq!(k6.count("chat_replies"), 15);
    assert_eq!(k6.checks(), checks(&s));
}

#[test]
fn k6_grpc_headers_trailers_and_status_messages_are_shown_as_k6() {
    let srv = GrpcServer::start(Reflection::Off);
    let r = pado_run("grpc_metadata.js", &env_of(&srv));
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    let s = r.summary();
    let st = srv.stats();
    assert_eq!((st.unary, st.unary_failed), (4, 2), "{st:?}");
    assert_eq!(
        (st.chats, st.chat_msgs_in, st.chat_msgs_out),
        (4, 6, 4),
        "{st:?}"
    );
    let c = &s["checks"];
    for name in [
        "ok status",
        "the header came",
        "the metadata reached the server",
        "NotFound",
        "the server's message",
        "the failure metadata came as trailers",
        "stream error in k6 shape",
        "one echo before the failure",
        "the stream deadline passed",
    ] {
        assert_eq!(num(&c[name], "passes"), 2.0, "{name}: {c:#}");
    }
    assert_eq!(checks(&s), (18, 0));
    // The failed stream is a failure of its series, by its status; the one cut
    // by its deadline a timeout.
    let chat = &s["steps"]["/pado.echo.Echo/Chat"];
    assert_eq!(num(chat, "errors.grpc_status"), 2.0, "{chat:#}");
    assert_eq!(num(chat, "errors.timeout"), 2.0, "{chat:#}");
    let srv = GrpcServer::start(Reflection::Off);
    let Some(k6) = run_k6("grpc_metadata.js", &env_of(&srv)) else {
        return;
    };
    assert_eq!(k6.exit, 0, "{}", k6.log);
    assert_eq!(
        k6.checks(),
        checks(&s),
        "{:#}\n{}",
        k6.export["root_group"]["checks"],
        k6.log
    );
}

#[test]
fn k6_reflection_stands_in_for_load_on_v1_and_v1alpha_servers() {
    for reflection in [Reflection::V1, Reflection::V1Alpha] {
        let srv = GrpcServer::start(reflection);
        let r = pado_run("grpc_reflect.js", &env_of(&srv));
        assert_eq!(
            r.code(),
            0,
            "{reflection:?}: {}\n{}",
            r.stdout(),
            r.stderr()
        );
        let s = r.summary();
        let st = srv.stats();
        assert_eq!(st.unary, 4, "{st:?}");
        // Each connect asked the reflection service (as k6 does).
        assert!(st.reflection >= 4, "{st:?}");
        assert_eq!(checks(&s), (8, 0), "{reflection:?}: {:#}", s["checks"]);
        assert_eq!(num(&s["steps"]["/pado.echo.Echo/Echo"], "requests"), 4.0);
    }
    // No reflection service: connect fails naming why, each iteration counted.
    let srv = GrpcServer::start(Reflection::Off);
    let r = pado_run("grpc_reflect.js", &env_of(&srv));
    let failures = std::fs::read_to_string(r.dir.join("failures.jsonl")).unwrap_or_default();
    assert!(
        failures.contains("no reflection service"),
        "{failures}\n{}",
        r.stderr()
    );
    assert_eq!(srv.stats().unary, 0);
    let srv = GrpcServer::start(Reflection::V1);
    let Some(k6) = run_k6("grpc_reflect.js", &env_of(&srv)) else {
        return;
    };
    assert_eq!(k6.exit, 0, "{}", k6.log);
    assert_eq!(srv.stats().unary, 4);
    assert_eq!(k6.checks(), (8, 0));
}

#[test]
fn k6_grpc_over_mutual_tls_presents_the_scripts_certificate() {
    let (ca, cert, key) = client_pki();
    let srv = GrpcServer::start_with(GrpcOptions {
        tls: true,
        client_ca_pem: Some(ca),
        ..GrpcOptions::default()
    });
    let dir = tmp("k6-grpc-tls");
    let server_ca = write_file(&dir, "server-ca.pem", &srv.cert_pem().unwrap());
    let cert = write_file(&dir, "client.pem", &cert);
    let key = write_file(&dir, "client-key.pem", &key);
    let env = vec![
        ("GRPC_ADDR", srv.addr()),
        ("PROTO_DIR", proto_dir()),
        ("SERVER_CA", server_ca.to_string_lossy().into_owned()),
        ("CLIENT_CERT", cert.to_string_lossy().into_owned()),
        ("CLIENT_KEY", key.to_string_lossy().into_owned()),
    ];
    let r = pado_run("grpc_tls.js", &env);
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    let s = r.summary();
    // Only the calls with the client certificate reached the service.
    assert_eq!(srv.stats().unary, 2, "{:?}", srv.stats());
    let c = &s["checks"];
    assert_eq!(num(&c["mutual TLS call is OK"], "passes"), 2.0, "{c:#}");
    assert_eq!(
        num(&c["no client certificate, no call"], "passes"),
        2.0,
        "{c:#}"
    );
    // The key's text never reaches the output.
    let key_text = std::fs::read_to_string(&key).unwrap();
    let secret = key_text.lines().nth(1).unwrap();
    assert!(!r.stdout().contains(secret) && !r.stderr().contains(secret));
    let before = srv.stats().unary;
    let Some(k6) = run_k6("grpc_tls.js", &env) else {
        return;
    };
    assert_eq!(k6.exit, 0, "{}", k6.log);
    assert_eq!(srv.stats().unary - before, 2);
    assert_eq!(k6.checks(), checks(&s), "{}", k6.log);
}

#[test]
fn k6_insecure_skip_tls_verify_accepts_a_grpc_servers_unknown_certificate() {
    for skip in ["1", "0"] {
        let srv = GrpcServer::start_with(GrpcOptions {
            tls: true,
            ..GrpcOptions::default()
        });
        let mut env = env_of(&srv);
        env.push(("SKIP", skip.to_string()));
        let r = pado_run("grpc_insecure.js", &env);
        assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
        let s = r.summary();
        // Without the option no call gets through the handshake.
        let want = if skip == "1" { 2 } else { 0 };
        assert_eq!(srv.stats().unary, want, "SKIP={skip}");
        assert_eq!(checks(&s), (2, 0), "SKIP={skip}: {:#}", s["checks"]);
        let srv = GrpcServer::start_with(GrpcOptions {
            tls: true,
            ..GrpcOptions::default()
        });
        let mut env = env_of(&srv);
        env.push(("SKIP", skip.to_string()));
        let Some(k6) = run_k6("grpc_insecure.js", &env) else {
            return;
        };
        assert_eq!(k6.exit, 0, "{}", k6.log);
        assert_eq!(srv.stats().unary, want, "k6, SKIP={skip}");
        assert_eq!(k6.checks(), (2, 0), "{}", k6.log);
    }
}

#[test]
fn k6_load_protoset_and_binary_metadata_reach_the_server_as_k6s() {
    let dir = tmp("k6-grpc-protoset");
    let protoset = dir.join("echo.protoset");
    std::fs::write(&protoset, ECHO_DESCRIPTOR_SET).unwrap();
    let env_with = |srv: &GrpcServer| {
        vec![
            ("GRPC_ADDR", srv.addr()),
            ("PROTOSET", protoset.to_string_lossy().into_owned()),
        ]
    };
    let srv = GrpcServer::start(Reflection::Off);
    let r = pado_run("grpc_protoset_bin.js", &env_with(&srv));
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    let s = r.summary();
    // 6 iterations, one call each (the refused one never leaves the script).
    assert_eq!(srv.stats().unary, 6, "{:?}", srv.stats());
    assert_eq!(num(&s["custom"]["echo_calls"], "values.count"), 6.0);
    let c = &s["checks"];
    for name in [
        "protoset call is OK",
        "the server got the bytes",
        "string metadata still sent",
        "the binary header came back",
        "a string -bin value is refused",
    ] {
        assert_eq!(num(&c[name], "passes"), 6.0, "{name}: {c:#}");
    }
    assert_eq!(checks(&s), (30, 0));
    let srv = GrpcServer::start(Reflection::Off);
    let Some(k6) = run_k6("grpc_protoset_bin.js", &env_with(&srv)) else {
        return;
    };
    assert_eq!(k6.exit, 0, "{}", k6.log);
    assert_eq!(srv.stats().unary, 6, "{}", k6.log);
    assert_eq!(k6.count("echo_calls"), 6);
    assert_eq!(k6.checks(), checks(&s), "{}", k6.log);
}

#[test]
fn k6_a_password_encrypted_client_key_is_decrypted_and_never_shown() {
    let Some(openssl) = require_or_skip("openssl", "openssl") else {
        return;
    };
    let (ca, cert, key) = client_pki();
    let srv = GrpcServer::start_with(GrpcOptions {
        tls: true,
        client_ca_pem: Some(ca),
        ..GrpcOptions::default()
    });
    let dir = tmp("k6-grpc-tls-password");
    let server_ca = write_file(&dir, "server-ca.pem", &srv.cert_pem().unwrap());
    let cert = write_file(&dir, "client.pem", &cert);
    let plain = write_file(&dir, "client-key.pem", &key);
    let password = "파도-s3cret-pw";
    // The same key encrypted as users do: PKCS#8 (PBES2, AES-256-CBC), and
    // OpenSSL's legacy form (the one k6 reads).
    let pkcs8 = dir.join("client-key.p8.pem");
    let legacy = dir.join("client-key.legacy.pem");
    for (out, args) in [
        (&pkcs8, vec!["pkcs8", "-topk8", "-v2", "aes-256-cbc"]),
        (&legacy, vec!["ec", "-aes256"]),
    ] {
        let o = std::process::Command::new(&openssl)
            .args(&args)
            .arg("-in")
            .arg(&plain)
            .arg("-out")
            .arg(out)
            .arg("-passout")
            .arg(format!("pass:{password}"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    std::fs::remove_file(&plain).unwrap();
    let env_of = |key: &std::path::Path| {
        vec![
            ("GRPC_ADDR", srv.addr()),
            ("PROTO_DIR", proto_dir()),
            ("SERVER_CA", server_ca.to_string_lossy().into_owned()),
            ("CLIENT_CERT", cert.to_string_lossy().into_owned()),
            ("KEY_FILE", key.to_string_lossy().into_owned()),
            ("KEY_PASSWORD", password.to_string()),
        ]
    };
    let mut calls = 0;
    for key in [&pkcs8, &legacy] {
        let r = pado_run("grpc_tls_password.js", &env_of(key));
        assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
        calls += 2;
        // Only the calls with the right password reached the service.
        assert_eq!(srv.stats().unary, calls, "{key:?}: {:?}", srv.stats());
        let s = r.summary();
        let c = &s["checks"];
        assert_eq!(
            num(&c["call with the decrypted key is OK"], "passes"),
            2.0,
            "{c:#}"
        );
        assert_eq!(num(&c["a wrong password, no call"], "passes"), 2.0, "{c:#}");
        // The wrong password is said, naming the field, and no password shows:
        // not in the output, not in any file of the result directory.
        let out = format!("{}{}", r.stdout(), r.stderr());
        assert!(
            out.contains("tls.password does not decrypt tls.key"),
            "{out}"
        );
        assert!(!out.contains("s3cret"), "{out}");
        for f in std::fs::read_dir(&r.dir).unwrap().flatten() {
            let text = std::fs::read(f.path()).unwrap_or_default();
            let text = String::from_utf8_lossy(&text);
            assert!(
                !text.contains("s3cret"),
                "{:?} shows the password",
                f.path()
            );
        }
    }
    let before = srv.stats().unary;
    let Some(k6) = run_k6("grpc_tls_password.js", &env_of(&legacy)) else {
        return;
    };
    assert_eq!(k6.exit, 0, "{}", k6.log);
    assert_eq!(srv.stats().unary - before, 2, "{}", k6.log);
    assert_eq!(k6.checks(), (4, 0), "{}", k6.log);
}
