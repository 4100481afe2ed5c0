//! The loopback server the client targets are answered from: each connection gets
//! the next input queued for it, once the client's request is in, and is then closed
//! (its side first, then read until the client closes, so the client reads
//! everything before the reset). One per worker thread, so inputs never mix.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener};
use std::sync::mpsc;
use std::time::Duration;

/// Most bytes of a client's request read before answering anyway.
const MAX_REQUEST: usize = 1 << 20;

/// A loopback server answering each connection with the next input queued.
pub(super) struct ReplayServer {
    /// Where it listens.
    pub(super) addr: SocketAddr,
    next: mpsc::Sender<Vec<u8>>,
}

impl ReplayServer {
    /// A server on a thread called `name`: it reads each connection until
    /// `request_in` says the client's request is in, then writes what `answer` makes
    /// of that request and the queued input.
    pub(super) fn start(
        name: &'static str,
        request_in: fn(&[u8]) -> bool,
        answer: fn(&[u8], Vec<u8>) -> Vec<u8>,
    ) -> ReplayServer {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind loopback fuzz server");
        let addr = l.local_addr().expect("local address");
        let (tx, rx) = mpsc::channel::<Vec<u8>>();
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                for data in rx {
                    let Ok((mut s, _)) = l.accept() else { continue };
                    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                    let _ = s.set_write_timeout(Some(Duration::from_secs(2)));
                    // No TIME_WAIT left behind: tens of thousands of connections a run.
                    let _ = socket2::SockRef::from(&s).set_linger(Some(Duration::ZERO));
                    let mut req = Vec::new();
                    let mut b = [0u8; 4096];
                    while !request_in(&req) && req.len() < MAX_REQUEST {
                        match s.read(&mut b) {
                            Ok(0) | Err(_) => break,
                            Ok(n) => req.extend_from_slice(&b[..n]),
                        }
                    }
                    let _ = s.write_all(&answer(&req, data));
                    let _ = s.shutdown(Shutdown::Write);
                    // Until the client closes, so it reads everything before the reset.
                    while let Ok(n) = s.read(&mut b) {
                        if n == 0 {
                            break;
                        }
                    }
                }
            })
            .expect("spawn loopback fuzz server");
        ReplayServer { addr, next: tx }
    }

    /// Queues `data` as the answer to the next connection; the server's address.
    pub(super) fn answer_next(&self, data: &[u8]) -> SocketAddr {
        let sent = self.next.send(data.to_vec()).is_ok();
        assert!(sent, "loopback fuzz server is gone");
        self.addr
    }
}

/// Whether an HTTP/1.1 request's head is in (its blank line).
pub(super) fn head_in(req: &[u8]) -> bool {
    req.windows(4).any(|w| w == b"\r\n\r\n")
}

/// The input as it is: the whole answer.
pub(super) fn as_is(_req: &[u8], data: Vec<u8>) -> Vec<u8> {
    data
}
