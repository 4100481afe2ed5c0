//! End-to-end tests of the server over raw TCP (and TLS).

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::*;

/// A response as read by [`read_response`].
#[derive(Debug)]
struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn connect(server: &TestServer) -> TcpStream {
    let s = TcpStream::connect(server.addr()).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    s
}

/// Reads more into `buf`; false on EOF.
fn fill(s: &mut impl Read, buf: &mut Vec<u8>) -> bool {
    let mut tmp = [0u8; 65536];
    let n = s.read(&mut tmp).expect("read");
    buf.extend_from_slice(&tmp[..n]);
    n > 0
}

/// Reads one response from `s` (leftover bytes stay in `buf`). `head_req`
/// says the request was HEAD (no body whatever the headers say).
fn read_response(s: &mut impl Read, buf: &mut Vec<u8>, head_req: bool) -> Resp {
    let (status, headers, head_len) = loop {
        let mut hs = [httparse::EMPTY_HEADER; 64];
        let mut r = httparse::Response::new(&mut hs);
        if let httparse::Status::Complete(n) = r.parse(buf).expect("valid response") {
            let headers = r
                .headers
                .iter()
                .map(|h| {
                    (
                        h.name.to_string(),
                        String::from_utf8_lossy(h.value).to_string(),
                    )
                })
                .collect::<Vec<_>>();
            break (r.code.expect("code"), headers, n);
        }
        assert!(fill(s, buf), "EOF in response head");
    };
    buf.drain(..head_len);
    let mut resp = Resp {
        status,
        headers,
        body: Vec::new(),
    };
    if head_req || status == 204 || status == 304 || (100..200).contains(&status) {
        return resp;
    }
    if resp.header("transfer-encoding").is_some() {
        loop {
            let (n, size) = loop {
                if let Ok(httparse::Status::Complete(v)) = httparse::parse_chunk_size(buf) {
                    break v;
                }
                assert!(fill(s, buf), "EOF in chunk size");
            };
            let size = size as usize;
            while buf.len() < n + size + 2 {
                assert!(fill(s, buf), "EOF in chunk");
            }
            resp.body.extend_from_slice(&buf[n..n + size]);
            buf.drain(..n + size + 2);
            if size == 0 {
                return resp;
            }
        }
    }
    match resp.header("content-length") {
        Some(len) => {
            let len: usize = len.parse().expect("length");
            while buf.len() < len {
                assert!(fill(s, buf), "EOF in body");
            }
            resp.body = buf.drain(..len).collect();
        }
        None => {
            while fill(s, buf) {}
            resp.body = std::mem::take(buf);
        }
    }
    resp
}

/// One request on a fresh connection.
fn get(server: &TestServer, path: &str) -> Resp {
    let mut s = connect(server);
    write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").expect("write");
    read_response(&mut s, &mut Vec::new(), false)
}

/// Reads until EOF or error; returns what was read and how it ended.
fn read_to_end(s: &mut TcpStream) -> (Vec<u8>, Option<ErrorKind>) {
    let mut out = Vec::new();
    let mut tmp = [0u8; 4096];
    loop {
        match s.read(&mut tmp) {
            Ok(0) => return (out, None),
            Ok(n) => out.extend_from_slice(&tmp[..n]),
            Err(e) => return (out, Some(e.kind())),
        }
    }
}

#[test]
fn handle_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<TestServer>();
    check::<Stats>();
    check::<RequestRecord>();
}

#[test]
fn counts_are_exact_over_keep_alive() {
    let server = TestServer::start();
    let mut s = connect(&server);
    let mut buf = Vec::new();
    for i in 0..20 {
        let path = if i % 2 == 0 { "/a?x=1" } else { "/b" };
        write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let r = read_response(&mut s, &mut buf, false);
        assert_eq!(r.status, 200);
        assert_eq!(r.body, b"ok\n");
    }
    s.write_all(b"POST /c HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
        .unwrap();
    assert_eq!(read_response(&mut s, &mut buf, false).status, 200);
    let stats = server.stats();
    assert_eq!(stats.requests, 21);
    assert_eq!(stats.connections, 1);
    assert_eq!(stats.by_path.get("/a"), Some(&10));
    assert_eq!(stats.by_path.get("/b"), Some(&10));
    assert_eq!(stats.by_path.get("/c"), Some(&1));
    assert_eq!(stats.by_method.get("GET"), Some(&20));
    assert_eq!(stats.by_method.get("POST"), Some(&1));
    let expected_bytes = 10 * "GET /a?x=1 HTTP/1.1\r\nHost: x\r\n\r\n".len()
        + 10 * "GET /b HTTP/1.1\r\nHost: x\r\n\r\n".len()
        + "POST /c HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello".len();
    assert_eq!(stats.bytes_received, expected_bytes as u64);
    let records = server.records();
    assert_eq!(records.len(), 21);
    assert!(records
        .iter()
        .all(|r| r.connection_id == records[0].connection_id));
    assert_eq!(records[20].body, b"hello");

    server.reset_stats();
    assert_eq!(server.stats(), Stats::default());
    assert!(server.records().is_empty());
    server.shutdown();
}

#[test]
fn delay_is_precise() {
    let server = TestServer::start();
    let mut s = connect(&server);
    let mut buf = Vec::new();
    for _ in 0..2 {
        let t = Instant::now();
        s.write_all(b"GET /delay/50 HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let r = read_response(&mut s, &mut buf, false);
        let took = t.elapsed();
        assert_eq!(r.status, 200);
        assert!(took >= Duration::from_millis(50), "{took:?}");
        assert!(took < Duration::from_millis(150), "{took:?}");
    }
    assert_eq!(get(&server, "/delay/abc").status, 400);
}

#[test]
fn pipelined_requests_are_all_answered() {
    let server = TestServer::start();
    let mut s = connect(&server);
    s.write_all(
        b"GET /status/201 HTTP/1.1\r\nHost: x\r\n\r\n\
          POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: a/b\r\nContent-Length: 3\r\n\r\nabc\
          GET /status/202 HTTP/1.1\r\nHost: x\r\n\r\n",
    )
    .unwrap();
    let mut buf = Vec::new();
    let r1 = read_response(&mut s, &mut buf, false);
    let r2 = read_response(&mut s, &mut buf, false);
    let r3 = read_response(&mut s, &mut buf, false);
    assert_eq!((r1.status, r1.body.as_slice()), (201, &b"status 201\n"[..]));
    assert_eq!((r2.status, r2.body.as_slice()), (200, &b"abc"[..]));
    assert_eq!(r2.header("content-type"), Some("a/b"));
    assert_eq!((r3.status, r3.body.as_slice()), (202, &b"status 202\n"[..]));
    assert_eq!(server.stats().requests, 3);
}

#[test]
fn reset_resets() {
    let server = TestServer::start();
    let mut s = connect(&server);
    s.write_all(b"GET /reset HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let (data, err) = read_to_end(&mut s);
    assert!(data.is_empty());
    assert!(
        matches!(err, None | Some(ErrorKind::ConnectionReset)),
        "{err:?}"
    );
    assert_eq!(server.stats().requests, 1);
}

#[test]
fn chunked_framing_is_exact() {
    let server = TestServer::start();
    let mut s = connect(&server);
    s.write_all(b"GET /chunked?chunks=2&size=17 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let (data, err) = read_to_end(&mut s);
    assert_eq!(err, None);
    let text = String::from_utf8(data).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.contains("Transfer-Encoding: chunked"));
    assert!(head.contains("Connection: close"));
    assert!(!head.contains("Content-Length"));
    let chunk = format!("11\r\n{}\r\n", "x".repeat(17));
    assert_eq!(body, format!("{chunk}{chunk}0\r\n\r\n"));

    // Defaults, through the generic reader.
    let r = get(&server, "/chunked");
    assert_eq!(r.body, "x".repeat(30).as_bytes());
}

#[test]
fn chunked_request_bodies_are_decoded() {
    let server = TestServer::start();
    let mut s = connect(&server);
    s.write_all(
        b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n\
          3\r\nabc\r\n4;ext=1\r\ndefg\r\n0\r\nX-Trailer: 1\r\n\r\n\
          GET / HTTP/1.1\r\nHost: x\r\n\r\n",
    )
    .unwrap();
    let mut buf = Vec::new();
    assert_eq!(read_response(&mut s, &mut buf, false).body, b"abcdefg");
    assert_eq!(read_response(&mut s, &mut buf, false).body, b"ok\n");
    let records = server.records();
    assert_eq!(records[0].body, b"abcdefg");
    assert_eq!(server.stats().requests, 2);
}

#[test]
fn head_has_headers_but_no_body() {
    let server = TestServer::start();
    let mut s = connect(&server);
    let mut buf = Vec::new();
    s.write_all(b"HEAD /bytes/1000 HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let r = read_response(&mut s, &mut buf, true);
    assert_eq!(r.header("content-length"), Some("1000"));
    s.write_all(b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let r = read_response(&mut s, &mut buf, true);
    assert_eq!(r.header("content-length"), Some("3"));
    // Had a body been sent, it would now be taken for the next response.
    s.write_all(b"GET /status/203 HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let r = read_response(&mut s, &mut buf, false);
    assert_eq!(r.status, 203);
    assert!(buf.is_empty());
}

#[test]
fn hangul_query_is_decoded_in_records() {
    let server = TestServer::start();
    let r = get(&server, "/api/search?q=%EA%B2%80%EC%83%89&page=2");
    assert_eq!(r.status, 200);
    let records = server.records();
    assert_eq!(records.len(), 1);
    let rec = &records[0];
    assert_eq!(rec.method, "GET");
    assert_eq!(rec.target, "/api/search?q=%EA%B2%80%EC%83%89&page=2");
    assert_eq!(rec.path, "/api/search");
    assert_eq!(
        rec.query,
        vec![
            ("q".to_string(), "검색".to_string()),
            ("page".to_string(), "2".to_string())
        ]
    );
    assert_eq!(rec.headers, vec![("Host".to_string(), "x".to_string())]);
    assert_eq!(server.stats().by_path.get("/api/search"), Some(&1));
}

#[test]
fn malformed_requests_get_400_and_the_server_survives() {
    let server = TestServer::start();
    for bad in [
        &b"NOT A REQUEST\r\n\r\n"[..],
        b"GET / HTTP/1.1\r\nContent-Length: nope\r\n\r\n",
        b"GET / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
        b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"\x00\x01\x02\xff\r\n\r\n",
    ] {
        let mut s = connect(&server);
        s.write_all(bad).unwrap();
        let (data, _) = read_to_end(&mut s);
        assert!(
            data.starts_with(b"HTTP/1.1 400 "),
            "{:?}",
            String::from_utf8_lossy(&data)
        );
    }
    // A connection closed mid-request is not counted and does no harm.
    let mut s = connect(&server);
    s.write_all(b"GET / HTTP/1.1\r\nHost").unwrap();
    drop(s);
    assert_eq!(server.stats().requests, 0);
    assert_eq!(get(&server, "/").body, b"ok\n");
    assert_eq!(server.stats().requests, 1);
}

#[test]
fn connection_close_and_http10() {
    let server = TestServer::start();
    // HTTP/1.1 with Connection: close
    let mut s = connect(&server);
    s.write_all(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let (data, err) = read_to_end(&mut s);
    assert_eq!(err, None);
    assert!(String::from_utf8_lossy(&data).contains("Connection: close"));
    // HTTP/1.0 closes by default...
    let mut s = connect(&server);
    s.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    let (data, err) = read_to_end(&mut s);
    assert_eq!(err, None);
    assert!(data.ends_with(b"\r\n\r\nok\n"));
    // ... unless asked to keep alive.
    let mut s = connect(&server);
    let mut buf = Vec::new();
    for _ in 0..2 {
        s.write_all(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            .unwrap();
        let r = read_response(&mut s, &mut buf, false);
        assert_eq!(r.header("connection"), Some("keep-alive"));
    }
    // /close closes even a keep-alive connection.
    let mut s = connect(&server);
    s.write_all(b"GET /close HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let (data, err) = read_to_end(&mut s);
    assert_eq!(err, None);
    assert!(data.ends_with(b"Connection: close\r\n\r\nok\n"));
    assert_eq!(server.stats().connections, 4);
    // /close-silently closes too, without saying so.
    let mut s = connect(&server);
    s.write_all(b"GET /close-silently HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let (data, err) = read_to_end(&mut s);
    assert_eq!(err, None);
    let text = String::from_utf8_lossy(&data).to_ascii_lowercase();
    assert!(text.ends_with("\r\n\r\nok\n"), "{text}");
    assert!(!text.contains("connection:"), "{text}");
}

#[test]
fn status_and_bodiless_responses() {
    let server = TestServer::start();
    let r = get(&server, "/status/503");
    assert_eq!((r.status, r.body.as_slice()), (503, &b"status 503\n"[..]));
    assert_eq!(get(&server, "/status/101").status, 200);
    assert_eq!(get(&server, "/status/600").status, 400);
    assert_eq!(get(&server, "/status/x").status, 400);

    let mut s = connect(&server);
    let mut buf = Vec::new();
    for (path, status) in [
        ("/nocontent", 204),
        ("/notmodified", 304),
        ("/status/204", 204),
    ] {
        write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let r = read_response(&mut s, &mut buf, false);
        assert_eq!(r.status, status);
        let cl = r.header("content-length");
        assert_eq!(
            cl,
            if path == "/notmodified" {
                Some("50")
            } else {
                None
            }
        );
    }
    // Nothing but the three heads came: the connection is still in sync.
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert_eq!(read_response(&mut s, &mut buf, false).body, b"ok\n");
}

#[test]
fn bodies_of_many_kinds() {
    let server = TestServer::start();
    let r = get(&server, "/bytes/200000");
    assert_eq!(r.body.len(), 200_000);
    assert!(r
        .body
        .iter()
        .enumerate()
        .all(|(i, b)| *b == b'a' + (i % 26) as u8));
    assert_eq!(get(&server, "/bytes/0").body, b"");

    let r = get(&server, "/eof-body");
    assert_eq!(r.header("content-length"), None);
    assert_eq!(r.body, b"until close\n");

    let mut s = connect(&server);
    s.write_all(b"GET /partial HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let (data, err) = read_to_end(&mut s);
    assert_eq!(err, None);
    assert!(data.ends_with(b"Content-Length: 100\r\nConnection: close\r\n\r\n0123456789"));

    let mut s = connect(&server);
    s.write_all(b"GET /continue HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut buf = Vec::new();
    assert_eq!(read_response(&mut s, &mut buf, false).status, 100);
    assert_eq!(read_response(&mut s, &mut buf, false).body, b"ok\n");

    let mut s = connect(&server);
    s.write_all(b"GET /garbage HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    assert_eq!(read_to_end(&mut s).0, b"this is not http\r\n\r\n");

    let mut s = connect(&server);
    s.write_all(b"GET /headers HTTP/1.1\r\nHost: h\r\nX-A: 1\r\nx-a: 2\r\n\r\n")
        .unwrap();
    let r = read_response(&mut s, &mut Vec::new(), false);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v, serde_json::json!({"host": "h", "x-a": "1, 2"}));

    let mut s = connect(&server);
    let mut buf = Vec::new();
    for n in 1..=2 {
        s.write_all(b"POST /json/login HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}")
            .unwrap();
        let r = read_response(&mut s, &mut buf, false);
        assert_eq!(r.body, format!("{{\"token\":\"tok-{n}\"}}").as_bytes());
    }
    s.write_all(b"POST /json/item HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
        .unwrap();
    let r = read_response(&mut s, &mut buf, false);
    assert_eq!((r.status, r.body.as_slice()), (201, &b"{\"id\":1}"[..]));
}

#[test]
fn slow_body_sends_headers_first() {
    let server = TestServer::start();
    let mut s = connect(&server);
    let t = Instant::now();
    s.write_all(b"GET /slow-body?ms=80 HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut first = [0u8; 1024];
    let n = s.read(&mut first).unwrap();
    let ttfb = t.elapsed();
    assert!(ttfb < Duration::from_millis(60), "{ttfb:?}");
    let mut buf = first[..n].to_vec();
    let r = read_response(&mut s, &mut buf, false);
    let total = t.elapsed();
    assert_eq!(r.body, b"ok\n");
    assert!(total >= Duration::from_millis(80), "{total:?}");
}

#[test]
fn stall_holds_requests_to_the_window_end() {
    let server = TestServer::start();
    // A window as long as the period: every request is held to the next
    // period boundary, i.e. at most 300 ms.
    let t = Instant::now();
    assert_eq!(
        get(&server, "/stall?period_ms=300&stall_ms=300").status,
        200
    );
    assert!(t.elapsed() < Duration::from_millis(400));
    // No window: answered at once.
    assert_eq!(get(&server, "/stall?stall_ms=0").status, 200);
    assert_eq!(server.stats().stalled, 1);
    assert_eq!(server.stats().by_path.get("/stall"), Some(&2));
}

#[test]
fn expect_continue_is_honoured() {
    let server = TestServer::start();
    let mut s = connect(&server);
    s.write_all(b"POST /echo HTTP/1.1\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n")
        .unwrap();
    let mut buf = Vec::new();
    assert_eq!(read_response(&mut s, &mut buf, false).status, 100);
    s.write_all(b"hi").unwrap();
    assert_eq!(read_response(&mut s, &mut buf, false).body, b"hi");
}

#[test]
fn shutdown_closes_hanging_connections() {
    let server = TestServer::start();
    let mut s = connect(&server);
    s.write_all(b"GET /hang HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut tmp = [0u8; 16];
    let err = s.read(&mut tmp).unwrap_err();
    assert!(matches!(
        err.kind(),
        ErrorKind::WouldBlock | ErrorKind::TimedOut
    ));
    let stats = server.shutdown_with_stats();
    assert_eq!(stats.requests, 1);
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let (data, _) = read_to_end(&mut s);
    assert!(data.is_empty());
}

#[test]
fn tls_works_with_the_generated_cert() {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, ServerName};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let server = TestServer::start_with(ServerOptions {
        tls: true,
        ..Default::default()
    });
    assert!(server.base_url().starts_with("https://127.0.0.1:"));
    let pem = server.cert_pem().expect("cert");
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(pem.as_bytes()).expect("pem"))
        .expect("root");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let addr = server.addr();
    rt.block_on(async move {
        for name in ["localhost", "127.0.0.1"] {
            let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
            let name = ServerName::try_from(name).unwrap().to_owned();
            let mut tls = connector.connect(name, tcp).await.expect("handshake");
            tls.write_all(b"GET /status/202 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .await
                .unwrap();
            let mut out = Vec::new();
            let _ = tls.read_to_end(&mut out).await;
            let text = String::from_utf8_lossy(&out);
            assert!(text.starts_with("HTTP/1.1 202 Accepted\r\n"), "{text}");
            assert!(text.ends_with("status 202\n"), "{text}");
        }
    });
    let stats = server.stats();
    assert_eq!(stats.requests, 2);
    assert_eq!(stats.connections, 2);
}

#[test]
fn slowing_grows_by_the_given_rate() {
    let start = Instant::now();
    let at = |s: f64| start + Duration::from_secs_f64(s);
    let d = |s: f64| conn::slowing_delay(start, at(s), 5.0, 2.0).as_secs_f64() * 1000.0;
    assert!((d(0.0) - 5.0).abs() < 1e-6);
    assert!((d(10.0) - 25.0).abs() < 1e-6);
    assert!((d(30.5) - 66.0).abs() < 1e-6);
    assert_eq!(
        conn::slowing_delay(start, at(3.0), f64::NAN, -1.0),
        Duration::ZERO
    );
    // Live: a request right after start waits about the base.
    let srv = TestServer::start();
    let t0 = Instant::now();
    let resp = get(&srv, "/slowing?base_ms=150&per_s_ms=1");
    let took = t0.elapsed();
    assert_eq!((resp.status, resp.body.as_slice()), (200, &b"ok\n"[..]));
    assert!(took >= Duration::from_millis(150), "{took:?}");
}

#[test]
fn redirect_routes_point_where_they_say() {
    let server = TestServer::start();
    let r = get(&server, "/redirect/2");
    assert_eq!(r.status, 302);
    assert_eq!(r.header("location"), Some("/redirect/1"));
    let r = get(&server, "/redirect/0");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"ok\n"[..]));
    let r = get(
        &server,
        "/redirect-to?url=http%3A%2F%2F127.0.0.1%3A9%2Fx%3Fa%3D1&status=307",
    );
    assert_eq!(r.status, 307);
    assert_eq!(r.header("location"), Some("http://127.0.0.1:9/x?a=1"));
    assert_eq!(get(&server, "/redirect-to?url=/a").status, 302);
    assert_eq!(get(&server, "/redirect-to?url=/a&status=200").status, 400);
    assert_eq!(get(&server, "/redirect-to?url=%0D%0AX:%201").status, 400);
    assert_eq!(server.stats().requests, 6);
}
