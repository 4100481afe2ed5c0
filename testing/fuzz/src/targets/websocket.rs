//! pado's WebSocket client against a server whose frames are the input: the real
//! session of a `ws:` step (pado's own connection, the upgrade and frames by
//! tokio-tungstenite under pado's limits, the actions, the counts, the debug
//! transcript) run once by [`pado_engine::run_single`], as `pado run --once` does.
//!
//! A loopback server of this thread answers the upgrade with a valid `101` (its
//! `Sec-WebSocket-Accept` computed from the client's key) and then the input as
//! its frames; an input that starts with `HTTP/` is the whole answer instead, the
//! head included (`{accept}` in it replaced by the right key). Then it closes its
//! side and reads until the client closes. The session must end quickly (the server
//! is gone: no action may wait for its timeout) and report its step.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pado_engine::trace::{Observer, Trace};
use pado_engine::RunPlan;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;

use super::replay::{head_in, ReplayServer};

/// The session's actions: a message out, one expected back (a text containing `a`),
/// another out. The wait (5 s) is far longer than a loopback answer, and longer
/// than the 4 s a session may take here, so an action that waits for it is caught.
const ACTIONS: &str = "            - send: 'hi {{ vu }}'\n            - expect: { body_contains: a, timeout: 5s }\n            - send: 파도\n";

/// Tokens of the frame language for the mutator.
pub(crate) const DICT: &[&[u8]] = &[
    b"\x81\x05hello",
    b"\x81\x01a",
    b"\x82\x03abc",
    b"\x01\x02ab",
    b"\x00\x01c",
    b"\x80\x01a",
    b"\x89\x00",
    b"\x8a\x00",
    b"\x88\x02\x03\xe8",
    b"\x88\x00",
    b"\x81\x7e\xff\xff",
    b"\x81\x7f\x7f\xff\xff\xff\xff\xff\xff\xff",
    b"\x81\x85\x00\x00\x00\x00",
    b"\xc1\x01a",
    b"\x81\x02\xff\xfe",
    b"HTTP/1.1 101 Switching Protocols\r\n",
    b"Upgrade: websocket\r\nConnection: Upgrade\r\n",
    b"Sec-WebSocket-Accept: {accept}\r\n",
    b"Sec-WebSocket-Extensions: permessage-deflate\r\n",
    b"Sec-WebSocket-Protocol: x\r\n",
    b"\r\n",
];

/// A message that matches, one split in fragments with pings between, a binary
/// message, a close, a frame masked by the server (a protocol error), a length that
/// says 2^63, invalid UTF-8 in a text, a whole answer with its head, a refused
/// upgrade.
pub(crate) fn seeds() -> Vec<Vec<u8>> {
    let head = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n";
    vec![
        b"\x81\x05a ok!\x88\x02\x03\xe8".to_vec(),
        b"\x01\x02ab\x89\x00\x00\x01c\x8a\x00\x80\x01a\x88\x00".to_vec(),
        b"\x82\x03abc\x81\x06\xed\x8c\x8c\xeb\x8f\x84".to_vec(),
        b"\x88\x02\x03\xe8".to_vec(),
        b"\x81\x85\x01\x02\x03\x04aaaaa".to_vec(),
        b"\x81\x7f\x7f\xff\xff\xff\xff\xff\xff\xffa".to_vec(),
        b"\x81\x02\xff\xfe".to_vec(),
        [&head[..], b"\x81\x01a"].concat(),
        b"HTTP/1.1 403 Forbidden\r\nContent-Length: 2\r\n\r\nno".to_vec(),
    ]
}

/// The upgrade's answer to a request head: `data` as the frames after a valid
/// `101`, or the whole answer when it starts with `HTTP/`.
fn answer(request: &[u8], data: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(request);
    let key = text
        .lines()
        .find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.trim()
                .eq_ignore_ascii_case("sec-websocket-key")
                .then(|| v.trim().to_string())
        })
        .unwrap_or_default();
    let accept = derive_accept_key(key.as_bytes());
    if data.starts_with(b"HTTP/") {
        let end = data
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map_or(data.len(), |p| p + 4);
        let head = String::from_utf8_lossy(&data[..end]).replace("{accept}", &accept);
        return [head.as_bytes(), &data[end..]].concat();
    }
    let mut out = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
    )
    .into_bytes();
    out.extend_from_slice(data);
    out
}

/// Counts the exchanges `--once` would print.
#[derive(Default)]
struct Counted(AtomicU64);

impl Observer for Counted {
    fn exchange(&self, t: Trace) {
        assert!(!t.step.is_empty(), "a trace without its step");
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// This thread's server and the plan of a one-step `ws:` scenario against it.
struct Rig {
    server: ReplayServer,
    plan: Arc<RunPlan>,
}

impl Rig {
    fn new() -> Rig {
        let server = ReplayServer::start("fuzz-ws-server", head_in, |req, data| answer(req, &data));
        let text = format!(
            "name: fuzz\ntarget: http://{}\ndefaults: {{ max_body: 64KiB, timeout: 2s }}\nscenarios:\n  s:\n    executor: constant-vus\n    vus: 1\n    duration: 1s\n    flow:\n      - name: ws\n        ws:\n          url: /ws\n          actions:\n{ACTIONS}",
            server.addr
        );
        let cfg = pado_scenario::load::parse_str(&text, "fuzz.yaml")
            .unwrap_or_else(|e| panic!("the ws fuzz scenario: {e}"));
        let plan = pado_engine::compile(&cfg, std::path::Path::new("."))
            .unwrap_or_else(|e| panic!("the ws fuzz scenario: {e}"));
        Rig {
            server,
            plan: Arc::new(plan),
        }
    }
}

thread_local! {
    static RIG: Rig = Rig::new();
}

/// One `ws:` session answered by the input's frames.
pub fn websocket(data: &[u8]) {
    let plan = RIG.with(|r| {
        r.server.answer_next(data);
        r.plan.clone()
    });
    let seen = Arc::new(Counted::default());
    let began = Instant::now();
    pado_engine::run_single(plan, seen.clone());
    let took = began.elapsed();
    assert!(
        took < Duration::from_secs(4),
        "the session took {took:?} though the server sent everything and closed"
    );
    assert!(
        seen.0.load(Ordering::Relaxed) >= 1,
        "the ws step's session was not reported"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_carries_the_key_the_client_needs() {
        // RFC 6455's own example: key dGhlIHNhbXBsZSBub25jZQ== → s3pPLMBiTxaQ9kYGzzhZRbK+xOo=.
        let req = b"GET /ws HTTP/1.1\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n";
        let a = answer(req, b"\x81\x01a");
        let text = String::from_utf8_lossy(&a);
        assert!(text.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"));
        assert!(a.ends_with(b"\x81\x01a"));
        let whole = answer(
            req,
            b"HTTP/1.1 101 X\r\nSec-WebSocket-Accept: {accept}\r\n\r\nrest",
        );
        assert_eq!(
            whole,
            b"HTTP/1.1 101 X\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\nrest"
        );
    }

    #[test]
    fn every_seed_session_ends_quickly() {
        for s in seeds() {
            websocket(&s);
        }
    }
}
