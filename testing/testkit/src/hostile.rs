//! Hostile servers: each speaks just enough of a protocol to get a client past its
//! handshake and then floods it, so a test can hold pado's memory to a bound while
//! a server misbehaves on purpose. Plain threads and blocking sockets on
//! 127.0.0.1; each server stops by itself at its deadline (or when dropped), and
//! counts how many bytes of its flood it wrote.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio_tungstenite::tungstenite::handshake::derive_accept_key;

/// What a hostile server does after its handshake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flood {
    /// WebSocket: ping frames (125 bytes each) as fast as the socket takes them,
    /// never reading the client's pongs.
    WsPings,
    /// WebSocket: a text message whose first frame has no FIN, then continuation
    /// frames of 64 KiB that never end it.
    WsEndlessMessage,
    /// HTTP/2 (h2c, prior knowledge): the answer to the first request is a HEADERS
    /// frame without END_HEADERS, then CONTINUATION frames of 16 KiB forever.
    H2Continuation,
}

/// A hostile server on a thread of its own (see [`Flood`]).
pub struct HostileServer {
    port: u16,
    stop: Arc<AtomicBool>,
    written: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl HostileServer {
    /// Starts a server that floods every connection as `flood` says, for at most
    /// `lasting` (then it closes everything and stops).
    pub fn start(flood: Flood, lasting: Duration) -> HostileServer {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("binding loopback");
        let port = listener.local_addr().expect("local addr").port();
        listener.set_nonblocking(true).expect("nonblocking");
        let stop = Arc::new(AtomicBool::new(false));
        let written = Arc::new(AtomicU64::new(0));
        let (s, w) = (Arc::clone(&stop), Arc::clone(&written));
        let end = Instant::now() + lasting;
        let thread = std::thread::spawn(move || {
            let mut conns = Vec::new();
            while Instant::now() < end && !s.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((tcp, _)) => {
                        let (s, w) = (Arc::clone(&s), Arc::clone(&w));
                        conns.push(std::thread::spawn(move || serve(tcp, flood, end, &s, &w)));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
            s.store(true, Ordering::SeqCst);
            for c in conns {
                let _ = c.join();
            }
        });
        HostileServer {
            port,
            stop,
            written,
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Bytes of flood written to clients so far.
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::SeqCst)
    }
}

impl Drop for HostileServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(mut tcp: TcpStream, flood: Flood, end: Instant, stop: &AtomicBool, written: &AtomicU64) {
    let _ = tcp.set_nodelay(true);
    // A blocked write wakes up now and then to look at the clock.
    let _ = tcp.set_write_timeout(Some(Duration::from_millis(100)));
    let _ = tcp.set_read_timeout(Some(Duration::from_secs(2)));
    let first: Vec<u8> = match flood {
        Flood::WsPings | Flood::WsEndlessMessage => {
            let Some(head) = read_head(&mut tcp) else {
                return;
            };
            let key = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.trim()
                        .eq_ignore_ascii_case("sec-websocket-key")
                        .then(|| v.trim().to_string())
                })
                .unwrap_or_default();
            let answer = format!(
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n\r\n",
                derive_accept_key(key.as_bytes())
            );
            if tcp.write_all(answer.as_bytes()).is_err() {
                return;
            }
            if flood == Flood::WsEndlessMessage {
                // Text, no FIN, 64 KiB payload (16-bit length).
                let mut f = vec![0x01, 126, 0xff, 0xff];
                f.resize(4 + 0xffff, b'a');
                f
            } else {
                Vec::new()
            }
        }
        Flood::H2Continuation => {
            // The client's preface and SETTINGS (and its first HEADERS) arrive
            // first; the stream is 1, the first a client opens.
            let mut buf = [0u8; 4096];
            let _ = tcp.read(&mut buf);
            let mut out = frame(0x4, 0, 0, &[]); // our SETTINGS (defaults)
            out.extend(frame(0x4, 0x1, 0, &[])); // ACK of theirs
                                                 // HEADERS on stream 1 without END_HEADERS: `:status: 200`, then a
                                                 // literal header whose value is far longer than any block.
            let mut block = vec![0x88, 0x00, 0x05];
            block.extend_from_slice(b"x-pad");
            block.extend_from_slice(&[0x7f, 0xff, 0xff, 0xff, 0x03]);
            out.extend(frame(0x1, 0, 1, &block));
            out
        }
    };
    if !first.is_empty() && tcp.write_all(&first).is_err() {
        return;
    }
    let unit: Vec<u8> = match flood {
        Flood::WsPings => {
            let mut f = vec![0x89, 125];
            f.resize(127, b'p');
            f.repeat(128)
        }
        Flood::WsEndlessMessage => {
            let mut f = vec![0x00, 126, 0xff, 0xff];
            f.resize(4 + 0xffff, b'a');
            f
        }
        Flood::H2Continuation => frame(0x9, 0, 1, &[b'a'; 16384]),
    };
    // `at`: where in `unit` the next write starts, so frames stay whole across
    // partial writes.
    let mut at = 0;
    while Instant::now() < end && !stop.load(Ordering::SeqCst) {
        match tcp.write(&unit[at..]) {
            Ok(0) => return,
            Ok(n) => {
                written.fetch_add(n as u64, Ordering::SeqCst);
                at = (at + n) % unit.len();
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
    }
}

/// The request head, up to its blank line.
fn read_head(tcp: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut b = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tcp.read(&mut b).ok()?;
        if n == 0 || head.len() > 64 * 1024 {
            return None;
        }
        head.extend_from_slice(&b[..n]);
    }
    String::from_utf8(head).ok()
}

/// One HTTP/2 frame: 9-byte header, then the payload.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}
