//! Which HTTP versions a run spoke and how many connections it opened, against the
//! servers' own counts: the test kit's HTTP/1.1 server and its HTTP/2 server count
//! every connection they accept, the WebSocket server every session.

use pado_testkit::h2server::{H2Options, H2Server};
use pado_testkit::{TestServer, WsServer};
use serde_json::{json, Value};

use crate::harness::{fixture, num, run, tmp, write_file};

fn run_text(name: &str, text: &str) -> crate::harness::Run {
    let dir = tmp(name);
    let f = write_file(&dir, "s.yaml", text);
    run(name, &[f.to_str().unwrap(), "--workers", "1"])
}

/// The summary's line of versions and connections.
fn http_line(stdout: &str) -> &str {
    stdout
        .lines()
        .find(|l| l.trim_start().starts_with("http ."))
        .unwrap_or("")
}

fn versions(s: &Value) -> &Value {
    &s["http_versions"]
}

/// Keep-alive holds: 4 VUs open 4 connections for 100 requests, as the server
/// counts them; without it (`connections: per-request`) every request opens one.
#[test]
fn http1_connections_opened_are_the_servers_count() {
    let srv = TestServer::start();
    let r = run_text(
        "proto-h1",
        &fixture(
            "protocols_http1_connections_opened_are_the_servers_count.yaml",
            &[("target", srv.base_url())],
        ),
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    let st = srv.stats();
    assert_eq!(st.requests, 100);
    assert_eq!(st.connections, 4, "one kept-alive connection per VU");
    assert_eq!(num(&s, "connections_opened") as u64, st.connections, "{s}");
    assert_eq!(*versions(&s), json!({"1.1": 100}), "{s}");
    assert_eq!(s["connections_by_version"], json!({"1.1": 4}), "{s}");
    assert!(s.get("connections_tls").is_none(), "{s}");
    let out = r.stdout();
    assert!(
        http_line(&out).ends_with("HTTP/1.1 (100 requests) · 4 connections opened"),
        "{out}"
    );

    srv.reset_stats();
    let r = run_text(
        "proto-h1-per-request",
        &fixture(
            "protocols_http1_connections_opened_are_the_servers_count_2.yaml",
            &[("target", srv.base_url())],
        ),
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    let st = srv.stats();
    assert_eq!((st.requests, st.connections), (20, 20));
    assert_eq!(num(&s, "connections_opened") as u64, st.connections, "{s}");
    assert_eq!(*versions(&s), json!({"1.1": 20}), "{s}");
}

/// HTTP/2 shares a worker's connections: 20 VUs with 10 streams each take 2, with
/// one stream each 4 VUs take 4, as the server counts them; every request is "2".
/// Over TLS (`auto`, ALPN h2) every connection opened is a TLS one.
#[test]
fn http2_connections_opened_are_the_servers_count() {
    for (max_streams, vus, conns) in [(10, 20_u32, 2), (1, 4, 4)] {
        let srv = H2Server::start(H2Options::default()).unwrap();
        let base = format!("http://{}", srv.addr);
        let r = run_text(
            "proto-h2",
            &fixture(
                "protocols_http2_connections_opened_are_the_servers_count.yaml",
                &[
                    ("target", base.to_string()),
                    ("max_streams", max_streams.to_string()),
                    ("vus", vus.to_string()),
                ],
            ),
        );
        assert_eq!(r.code(), 0, "{}", r.stderr());
        let s = r.summary();
        let n = u64::from(vus) * 5;
        assert_eq!(srv.requests(), n);
        assert_eq!(srv.connections(), conns, "max_streams {max_streams}");
        assert_eq!(num(&s, "connections_opened") as u64, conns, "{s}");
        assert_eq!(*versions(&s), json!({"2": n}), "{s}");
        assert_eq!(s["connections_by_version"], json!({"2": conns}), "{s}");
        let out = r.stdout();
        assert!(
            http_line(&out).ends_with(&format!(
                "HTTP/2 ({n} requests) · {conns} connections opened"
            )),
            "{out}"
        );
    }

    let srv = H2Server::start(H2Options {
        tls: true,
        ..Default::default()
    })
    .unwrap();
    let base = format!("https://localhost:{}", srv.addr.port());
    let r = run_text(
        "proto-h2-tls",
        &fixture(
            "protocols_http2_connections_opened_are_the_servers_count_2.yaml",
            &[("target", base.to_string())],
        ),
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    assert_eq!(srv.connections(), 3);
    assert_eq!(num(&s, "connections_opened"), 3.0, "{s}");
    assert_eq!(num(&s, "connections_tls"), 3.0, "{s}");
    assert_eq!(*versions(&s), json!({"2": 12}), "{s}");
    assert!(
        http_line(&r.stdout()).ends_with("3 connections opened (all over TLS)"),
        "{}",
        r.stdout()
    );
}

/// A WebSocket session is an HTTP/1.1 upgrade on a connection of its own: as many
/// requests and connections as the server counted sessions.
#[test]
fn websocket_sessions_are_http1_upgrades_on_their_own_connections() {
    let srv = WsServer::start();
    let text = fixture(
        "protocols_ws_upgrades.yaml",
        &[("target", srv.http_base_url())],
    );
    let r = run_text("proto-ws", &text);
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    let s = r.summary();
    let sessions = srv.stats().sessions;
    assert_eq!(sessions, 6);
    assert_eq!(*versions(&s), json!({"1.1": sessions}), "{s}");
    assert_eq!(num(&s, "connections_opened") as u64, sessions, "{s}");
}
