//! pado's HTTP/1.1 client fed any bytes as the server's answer: the sans-I/O framing
//! and the real exchange over loopback TCP, then what checks read.

use std::time::Duration;

use pado_engine::cookies::CookieJar;
use pado_engine::response_view::ResponseView;
use pado_http::response::{parse_head, BodyKind, ChunkedDecoder};
use pado_http::{exchange, Origin, RequestRef};

use super::block_on;
use super::replay::{as_is, head_in, ReplayServer};

thread_local! {
    static SERVER: ReplayServer = ReplayServer::start("fuzz-http-server", head_in, as_is);
}

// ---- HTTP response -----------------------------------------------------------------

/// Largest body kept, as a check's body cap would.
const BODY_CAP: usize = 1 << 20;

/// The client's response framing. The bytes are the server's whole answer: parsed
/// sans-I/O as the client does (the head re-parsed as pieces arrive, the body framed
/// and de-chunked piece by piece) for both GET and HEAD, then sent by a loopback
/// server to the real `exchange()`; what checks read (header view, cookie jar, JSON
/// body) is built from both.
pub fn http_response(data: &[u8]) {
    let mix = data
        .iter()
        .fold(0usize, |h, b| h.wrapping_mul(31).wrapping_add(*b as usize));
    let piece = 1 + mix % 61;
    sans_io(data, false, piece);
    sans_io(data, true, piece);
    loopback(data, mix % 7 == 0);
}

fn keep(body: &mut Vec<u8>, b: &[u8]) {
    let room = BODY_CAP.saturating_sub(body.len());
    body.extend_from_slice(&b[..b.len().min(room)]);
}

fn sans_io(data: &[u8], is_head: bool, piece: usize) {
    // At most ~64 re-parses of the head, as a slow server's reads would cause.
    let piece = piece.max(data.len() / 64).max(1);
    let mut buf = Vec::new();
    let mut fed = 0;
    let head = loop {
        let end = (fed + piece).min(data.len());
        buf.extend_from_slice(&data[fed..end]);
        fed = end;
        match parse_head(&buf, is_head) {
            Ok(Some(h)) => break h,
            Ok(None) if fed < data.len() => continue,
            Ok(None) => return,
            Err(e) => {
                let _ = e.to_string();
                return;
            }
        }
    };
    assert!(
        head.start <= head.len && head.len <= buf.len(),
        "head {head:?} outside the {} bytes read",
        buf.len()
    );
    let rest = &data[head.len..];
    let mut body = Vec::new();
    match head.body {
        BodyKind::None => {}
        BodyKind::Length(n) => {
            let n = n.min(rest.len() as u64) as usize;
            keep(&mut body, &rest[..n]);
        }
        BodyKind::UntilClose => keep(&mut body, rest),
        BodyKind::Chunked => {
            let mut dec = ChunkedDecoder::new();
            for p in rest.chunks(piece) {
                match dec.feed(p, |b| keep(&mut body, b)) {
                    Ok(used) => {
                        assert!(
                            used == p.len() || (used < p.len() && dec.is_done()),
                            "chunked decoder consumed {used} of {} bytes and is_done={}",
                            p.len(),
                            dec.is_done()
                        );
                        if dec.is_done() {
                            break;
                        }
                    }
                    Err(e) => {
                        let _ = e.to_string();
                        break;
                    }
                }
            }
        }
    }
    read_like_checks(head.status, &buf[head.start..head.len], &body);
}

/// What checks, extraction and the cookie jar read from a response.
pub(crate) fn read_like_checks(status: u16, head: &[u8], body: &[u8]) {
    let view = ResponseView::new(status, head, body);
    let mut jar = CookieJar::default();
    jar.absorb(0, &view);
    let mut out = Vec::new();
    jar.write_header(0, &mut out);
    let _ = view.header("content-type");
    let _ = view.headers("set-cookie").count();
    let _ = view.json();
}

fn loopback(data: &[u8], is_head: bool) {
    let addr = SERVER.with(|s| s.answer_next(data));
    let origin = Origin {
        label: format!("http://{addr}"),
        host: addr.ip().to_string(),
        port: addr.port(),
        addrs: vec![addr],
        names: None,
        proxy: None,
        tls: None,
        protocol: pado_http::Protocol::Http1,
        h2_tls: None,
    };
    let request: &[u8] = if is_head {
        b"HEAD /fuzz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    } else {
        b"GET /fuzz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    };
    let mut body = Vec::new();
    let mut head = Vec::new();
    let mut slot = None;
    let ex = block_on(exchange(
        &mut slot,
        &origin,
        RequestRef {
            bytes: request,
            is_head,
            // One connection per input: the server answers each connection once.
            resend_safe: false,
            timeout: Duration::from_secs(3),
            keep_body: Some((&mut body, BODY_CAP)),
            keep_head: Some((&mut head, true)),
            failed_prefix: None,
            decoder: None,
            sse: None,
        },
    ));
    drop(slot);
    assert!(
        ex.error != Some(pado_metrics::ErrorKind::Timeout),
        "exchange timed out on a response the server sent whole and closed"
    );
    assert!(body.len() <= BODY_CAP, "kept body over its cap");
    read_like_checks(ex.status, &head, &body);
}
