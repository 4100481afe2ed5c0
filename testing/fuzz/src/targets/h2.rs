//! pado's HTTP/2 client and its gRPC calls against a server whose every byte after
//! the connection opens is the input: its SETTINGS, HEADERS (HPACK), DATA,
//! RST_STREAM, GOAWAY, PUSH_PROMISE, CONTINUATION frames, whatever they say.
//!
//! Each input is one h2c connection (prior knowledge) from a fresh [`H2Pool`] to a
//! loopback server of this thread, which writes the input, closes its side and
//! waits for the client to close. The real client paths run on it: `h2_response`
//! one request through [`exchange_h2`] (its body decoded when the answer says
//! `Content-Encoding`), `grpc_response` one call through [`exchange_grpc`] (reply
//! messages split from DATA frames, the status from trailers or a trailers-only
//! head). The server sent everything and closed, so neither may wait for its
//! timeout; kept bodies and messages stay within their caps; a call always ends with
//! a status or a named failure.

use std::time::{Duration, Instant};

use pado_http::decode::BodyDecoder;
use pado_http::grpc::NO_STATUS_CODE;
use pado_http::{exchange_grpc, exchange_h2, GrpcCall, GrpcRequest, H2Pool, H2Request, Origin};
use pado_http::{Protocol, RequestRef};
use pado_metrics::ErrorKind;

use super::replay::{as_is, ReplayServer};
use super::RUNTIME;

/// Largest body kept, as a check's body cap would.
const BODY_CAP: usize = 64 * 1024;
/// Largest gRPC message accepted.
const MAX_MESSAGE: usize = 64 * 1024;
/// A request's or call's whole budget: far more than a loopback answer needs.
const TIMEOUT: Duration = Duration::from_secs(3);

// ---- the server's frames -----------------------------------------------------------

/// Frame types (RFC 9113 §6).
const DATA: u8 = 0;
const HEADERS: u8 = 1;
const RST_STREAM: u8 = 3;
const SETTINGS: u8 = 4;
const PUSH_PROMISE: u8 = 5;
const PING: u8 = 6;
const GOAWAY: u8 = 7;
const WINDOW_UPDATE: u8 = 8;
const CONTINUATION: u8 = 9;
/// Flags.
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;

/// One frame: its 9-byte header and payload.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut f = len.to_be_bytes()[1..].to_vec();
    f.push(kind);
    f.push(flags);
    f.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// An HPACK block of literal fields without indexing (new names), after `status`
/// as an indexed field of the static table (`0x88` is `:status: 200`).
fn hpack(status: Option<u8>, fields: &[(&str, &[u8])]) -> Vec<u8> {
    let mut b = Vec::new();
    if let Some(s) = status {
        b.push(s);
    }
    for (n, v) in fields {
        b.push(0);
        b.push(n.len() as u8);
        b.extend_from_slice(n.as_bytes());
        b.push(v.len() as u8);
        b.extend_from_slice(v);
    }
    b
}

/// Tokens of the frame language for the mutator: frame headers of each type on
/// stream 1 and 0, field blocks, sizes.
pub(crate) const DICT: &[&[u8]] = &[
    b"\x00\x00\x00\x04\x00\x00\x00\x00\x00",
    b"\x00\x00\x00\x04\x01\x00\x00\x00\x00",
    b"\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x00",
    b"\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x04\x7f\xff\xff\xff",
    b"\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x05\x00\xff\xff\xff",
    b"\x00\x00\x01\x01\x04\x00\x00\x00\x01\x88",
    b"\x00\x00\x01\x01\x05\x00\x00\x00\x01\x88",
    b"\x00\x00\x01\x01\x00\x00\x00\x00\x01\x88",
    b"\x00\x00\x00\x09\x04\x00\x00\x00\x01",
    b"\x00\x00\x05\x00\x01\x00\x00\x00\x01",
    b"\x00\x00\x05\x00\x00\x00\x00\x00\x01",
    b"\x00\x00\x04\x03\x00\x00\x00\x00\x01\x00\x00\x00\x07",
    b"\x00\x00\x08\x07\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00",
    b"\x00\x00\x04\x08\x00\x00\x00\x00\x01\x7f\xff\xff\xff",
    b"\x00\x00\x08\x06\x00\x00\x00\x00\x00",
    b"\x00\x00\x08\x05\x04\x00\x00\x00\x01\x00\x00\x00\x02",
    b"\xff\xff\xff",
    b"\x00\x0ecache-control",
    b"\x00\x10content-encoding\x04gzip",
    b"\x00\x0ccontent-type\x10application/grpc",
    b"\x00\x0bgrpc-status\x010",
    b"\x00\x0bgrpc-status\x0299",
    b"\x00\x0cgrpc-message\x03%ff",
    b"\x00\x00\x00\x00\x05hello",
    b"\x01\x00\x00\x00\x05",
    b"\x00\xff\xff\xff\xff",
    b"\x3f\xe1\x1f",
    b"\x20",
];

fn settings() -> Vec<u8> {
    frame(SETTINGS, 0, 0, &[])
}

/// Plain HTTP/2 answers: headers and a body in one and in several DATA frames; a
/// gzip body that is not gzip; a reset stream; GOAWAY; a push promise; headers split
/// by CONTINUATION; a ping and window update before the answer.
pub(crate) fn h2_seeds() -> Vec<Vec<u8>> {
    let ok = hpack(Some(0x88), &[("content-type", b"application/json")]);
    let cat = |frames: Vec<Vec<u8>>| frames.concat();
    vec![
        cat(vec![
            settings(),
            frame(HEADERS, END_HEADERS, 1, &ok),
            frame(DATA, END_STREAM, 1, b"{\"a\":[1,2]}"),
        ]),
        cat(vec![
            settings(),
            frame(SETTINGS, 1, 0, &[]),
            frame(PING, 0, 0, &[0; 8]),
            frame(WINDOW_UPDATE, 0, 0, &1000u32.to_be_bytes()),
            frame(
                HEADERS,
                END_HEADERS,
                1,
                &hpack(Some(0x88), &[("content-length", b"10")]),
            ),
            frame(DATA, 0, 1, b"hello"),
            frame(DATA, END_STREAM, 1, "파도".as_bytes()),
        ]),
        cat(vec![
            settings(),
            frame(
                HEADERS,
                END_HEADERS,
                1,
                &hpack(Some(0x88), &[("content-encoding", b"gzip")]),
            ),
            frame(DATA, END_STREAM, 1, b"\x1f\x8b\x08\x00not gzip"),
        ]),
        cat(vec![
            settings(),
            frame(RST_STREAM, 0, 1, &7u32.to_be_bytes()),
        ]),
        cat(vec![
            settings(),
            frame(GOAWAY, 0, 0, &[0, 0, 0, 0, 0, 0, 0, 2]),
        ]),
        cat(vec![
            settings(),
            frame(PUSH_PROMISE, END_HEADERS, 1, &[0, 0, 0, 2, 0x82]),
            frame(HEADERS, END_HEADERS | END_STREAM, 1, &[0x8d]),
        ]),
        cat(vec![
            settings(),
            frame(HEADERS, 0, 1, &[0x88]),
            frame(CONTINUATION, 0, 1, &hpack(None, &[("x-a", b"1")])),
            frame(
                CONTINUATION,
                END_HEADERS,
                1,
                &hpack(None, &[("x-b", "한글".as_bytes())]),
            ),
            frame(DATA, END_STREAM, 1, b"ok"),
        ]),
    ]
}

fn grpc_head() -> Vec<u8> {
    hpack(Some(0x88), &[("content-type", b"application/grpc")])
}

fn message(m: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    pado_http::grpc::frame_message(m, &mut v);
    v
}

/// gRPC answers: one message and an OK trailer; messages split across and packed
/// into DATA frames; a trailers-only error; no status at all; a compressed message;
/// a message longer than the cap; a non-200 head.
pub(crate) fn grpc_seeds() -> Vec<Vec<u8>> {
    let ok_trailer = hpack(None, &[("grpc-status", b"0")]);
    let cat = |frames: Vec<Vec<u8>>| frames.concat();
    let two = [
        message(b"\x0a\x05hello"),
        message("\x0a\x06파도".as_bytes()),
    ]
    .concat();
    let mut big = message(&[]);
    big[1..5].copy_from_slice(&(1u32 << 20).to_be_bytes());
    vec![
        cat(vec![
            settings(),
            frame(HEADERS, END_HEADERS, 1, &grpc_head()),
            frame(DATA, 0, 1, &message(b"\x0a\x05hello")),
            frame(HEADERS, END_HEADERS | END_STREAM, 1, &ok_trailer),
        ]),
        cat(vec![
            settings(),
            frame(HEADERS, END_HEADERS, 1, &grpc_head()),
            frame(DATA, 0, 1, &two[..3]),
            frame(DATA, 0, 1, &two[3..]),
            frame(HEADERS, END_HEADERS | END_STREAM, 1, &ok_trailer),
        ]),
        cat(vec![
            settings(),
            frame(
                HEADERS,
                END_HEADERS | END_STREAM,
                1,
                &hpack(
                    Some(0x88),
                    &[
                        ("content-type", b"application/grpc"),
                        ("grpc-status", b"5"),
                        ("grpc-message", b"not%20found"),
                    ],
                ),
            ),
        ]),
        cat(vec![
            settings(),
            frame(HEADERS, END_HEADERS, 1, &grpc_head()),
            frame(DATA, END_STREAM, 1, &message(b"x")),
        ]),
        cat(vec![
            settings(),
            frame(HEADERS, END_HEADERS, 1, &grpc_head()),
            frame(DATA, 0, 1, &[1, 0, 0, 0, 1, 0]),
            frame(HEADERS, END_HEADERS | END_STREAM, 1, &ok_trailer),
        ]),
        cat(vec![
            settings(),
            frame(HEADERS, END_HEADERS, 1, &grpc_head()),
            frame(DATA, 0, 1, &big),
        ]),
        cat(vec![
            settings(),
            frame(HEADERS, END_HEADERS | END_STREAM, 1, &[0x8d]),
        ]),
    ]
}

// ---- the loopback server -----------------------------------------------------------

/// Whether the client's bytes so far hold its connection preface and a HEADERS
/// frame (its request).
fn has_request(client: &[u8]) -> bool {
    const PREFACE: usize = 24;
    let mut at = PREFACE;
    while client.len() >= at + 9 {
        if client[at + 3] == HEADERS {
            return true;
        }
        let len = u32::from_be_bytes([0, client[at], client[at + 1], client[at + 2]]) as usize;
        at += 9 + len;
    }
    false
}

thread_local! {
    // The answer goes out once the client's request (its HEADERS) is in: frames for
    // a stream the client has not opened yet are a different input, decided by a
    // race.
    static SERVER: ReplayServer = ReplayServer::start("fuzz-h2-server", has_request, as_is);
}

/// The h2c origin of this thread's server, with `data` queued as its next answer.
fn origin_answering(data: &[u8]) -> Origin {
    let addr = SERVER.with(|s| s.answer_next(data));
    Origin {
        label: format!("http://{addr}"),
        host: addr.ip().to_string(),
        port: addr.port(),
        addrs: vec![addr],
        names: None,
        proxy: None,
        tls: None,
        protocol: Protocol::Http2,
        h2_tls: None,
    }
}

/// `f` on this thread's runtime inside a fresh `LocalSet` (the pool's connection
/// tasks are spawned on it), dropped after, so no task outlives its input.
fn on_local<F: std::future::Future>(f: F) -> F::Output {
    RUNTIME.with(|rt| {
        let local = tokio::task::LocalSet::new();
        local.block_on(rt, f)
    })
}

// ---- the targets -------------------------------------------------------------------

/// One HTTP/2 request answered by the input's frames.
pub fn h2_response(data: &[u8]) {
    let origin = origin_answering(data);
    let request = H2Request::from_http1(
        b"GET /fuzz HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept-Encoding: gzip, br, zstd\r\n\r\n",
        &origin,
    )
    .expect("a valid request");
    let mut body = Vec::new();
    let mut head = Vec::new();
    let mut decoder = BodyDecoder::for_max_body(BODY_CAP);
    let began = Instant::now();
    let ex = on_local(async {
        let pool = H2Pool::new(4);
        exchange_h2(
            &pool,
            &origin,
            RequestRef {
                bytes: b"",
                is_head: false,
                resend_safe: false,
                timeout: TIMEOUT,
                keep_body: Some((&mut body, BODY_CAP)),
                keep_head: Some((&mut head, true)),
                failed_prefix: None,
                decoder: Some(&mut decoder),
                sse: None,
            },
            Some(&request),
        )
        .await
    });
    let ex = match ex {
        Ok(ex) => ex,
        Err(_) => panic!("an h2c origin fell back to HTTP/1.1"),
    };
    assert!(
        ex.error != Some(ErrorKind::Timeout),
        "the request timed out after {:?} on an answer the server sent whole and closed",
        began.elapsed()
    );
    // The exchange keeps one byte past the cap to tell a body that overflowed it.
    assert!(
        body.len() <= BODY_CAP + 1,
        "kept body of {} bytes",
        body.len()
    );
    if ex.error.is_none() {
        assert!(
            ex.status >= 100,
            "a successful exchange with status {}",
            ex.status
        );
    }
    #[cfg(feature = "engine")]
    super::http1::read_like_checks(ex.status, &head, &body);
}

/// One gRPC call answered by the input's frames.
pub fn grpc_response(data: &[u8]) {
    let origin = origin_answering(data);
    let request = GrpcRequest::new(
        &origin,
        "/echo.Echo/Say",
        &[("x-room".into(), "1".into())],
        TIMEOUT,
    )
    .expect("a valid call");
    let max_messages = match data.len() % 4 {
        0 => Some(1 + (data.len() as u64 % 3)),
        _ => None,
    };
    let mut frame_buf = Vec::new();
    let mut seen = 0u64;
    let began = Instant::now();
    let out = on_local(async {
        let pool = H2Pool::new(4);
        exchange_grpc(
            &pool,
            &origin,
            GrpcCall {
                request: &request,
                metadata: &[],
                body: message(b"\x0a\x02hi").into(),
                timeout: TIMEOUT,
                max_messages,
                max_message: MAX_MESSAGE,
            },
            &mut frame_buf,
            |m, _| {
                assert!(m.len() <= MAX_MESSAGE, "a message of {} bytes", m.len());
                seen += 1;
            },
        )
        .await
    });
    let ex = out.exchange;
    assert!(
        ex.error != Some(ErrorKind::Timeout),
        "the call timed out after {:?} on an answer the server sent whole and closed",
        began.elapsed()
    );
    assert_eq!(out.messages, seen, "messages counted and handed on differ");
    if let Some(m) = max_messages {
        assert!(
            out.messages <= m,
            "{} messages read past the limit {m}",
            out.messages
        );
    }
    match out.code {
        // A call without a status failed (transport) or was cut at max_messages.
        None => assert!(
            ex.error.is_some() || out.limited,
            "a call with no status, no failure and not cut"
        ),
        Some(NO_STATUS_CODE) if ex.error.is_none() => {
            // INTERNAL may be the server's own grpc-status 13; pado's is named.
        }
        Some(_) => {}
    }
    if ex.error.is_none() && out.code.is_some() {
        assert!(
            frame_buf.is_empty() || out.limited,
            "a call ended inside a message yet passed"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_planted_answer_reaches_the_client_whole() {
        // The first seed is 200 with an 11-byte JSON body: the real client reads it.
        let data = &h2_seeds()[0];
        let origin = origin_answering(data);
        let request = H2Request::from_http1(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", &origin).unwrap();
        let mut body = Vec::new();
        let ex = on_local(async {
            let pool = H2Pool::new(1);
            exchange_h2(
                &pool,
                &origin,
                RequestRef {
                    bytes: b"",
                    is_head: false,
                    resend_safe: false,
                    timeout: TIMEOUT,
                    keep_body: Some((&mut body, BODY_CAP)),
                    keep_head: None,
                    failed_prefix: None,
                    decoder: None,
                    sse: None,
                },
                Some(&request),
            )
            .await
        })
        .ok()
        .unwrap();
        assert_eq!((ex.status, ex.error), (200, None));
        assert_eq!(body, b"{\"a\":[1,2]}");
    }

    #[test]
    fn planted_grpc_answers_give_their_codes_and_messages() {
        let call = |data: &[u8]| {
            let origin = origin_answering(data);
            let request = GrpcRequest::new(&origin, "/e.E/M", &[], TIMEOUT).unwrap();
            let mut buf = Vec::new();
            on_local(async {
                let pool = H2Pool::new(1);
                exchange_grpc(
                    &pool,
                    &origin,
                    GrpcCall {
                        request: &request,
                        metadata: &[],
                        body: message(b"").into(),
                        timeout: TIMEOUT,
                        max_messages: None,
                        max_message: MAX_MESSAGE,
                    },
                    &mut buf,
                    |_, _| {},
                )
                .await
            })
        };
        let seeds = grpc_seeds();
        let one = call(&seeds[0]);
        assert_eq!(
            (one.code, one.messages, one.exchange.error),
            (Some(0), 1, None)
        );
        let split = call(&seeds[1]);
        assert_eq!((split.code, split.messages), (Some(0), 2));
        let only = call(&seeds[2]);
        assert_eq!((only.code, only.messages), (Some(5), 0));
        let none = call(&seeds[3]);
        assert_eq!(none.code, Some(NO_STATUS_CODE));
        assert_eq!(none.exchange.error, Some(ErrorKind::Protocol));
    }
}
