//! Closing a connection whose request was refused (`401`, `403`, `413`, `400`...)
//! without losing the refusal to a TCP reset.
//!
//! A refused request's body is not read (the gate judges the head first). But a
//! client may send it anyway, with its head or just after: curl and CI scripts do
//! not wait for an answer before sending a body. If the server then closes the
//! socket with bytes of that body unread in its receive buffer, or more of the
//! body arrives after the close, the kernel answers with a reset (RST) instead of
//! an orderly end, and the client sees "Connection reset by peer" — often
//! instead of the `401 wrong token` that was already sent, which it loses.
//!
//! So after the refusal is written, [`lingering_close`] shuts down the write side
//! (the client reads the answer and an end of stream), then reads and discards
//! what the client still sends, until it stops sending, until the body the head
//! announced is in, or until a bound in bytes or time ([`Linger`]) is reached,
//! and only then closes. Nothing is kept: the discarded bytes go through one small
//! buffer, and a client that sends slowly or without end is cut off at the time
//! bound, so a refused stranger costs at most [`LINGER`]'s bytes and seconds.

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

use crate::request::{body_framing, Framing, Request};

/// How much a refused connection may still send before it is closed anyway.
#[derive(Clone, Copy, Debug)]
pub struct Linger {
    /// The most bytes read and discarded.
    pub max_bytes: u64,
    /// The most time spent, from the start of the lingering close (the write
    /// side's shutdown included) to the close.
    pub max_time: Duration,
}

/// The bounds pado's control servers (agent, generator endpoint, dashboard)
/// linger within: a refused control request's body is a command or a job bundle
/// sent anyway, and 1 MiB in 2 s is more than such a client sends before it reads
/// its answer and closes, while a stranger holds a connection for 2 s at most.
pub const LINGER: Linger = Linger {
    max_bytes: 1 << 20,
    max_time: Duration::from_secs(2),
};

/// How much of a refused request's body may still be on its way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unread {
    /// This many bytes, announced by `Content-Length` and not yet read.
    Bytes(u64),
    /// A body of unknown length (chunked, or a request whose framing could not be
    /// read at all): discard until the client stops or a bound is reached.
    Unknown,
}

impl Unread {
    /// What of `req`'s body is still to come, `buffered` bytes after its head
    /// having been read with it (what the caller's buffer still holds).
    pub fn after(req: &Request, buffered: usize) -> Unread {
        match body_framing(&req.headers) {
            Ok(Framing::Length(n)) => Unread::Bytes(n.saturating_sub(buffered as u64)),
            Ok(Framing::Chunked) | Err(_) => Unread::Unknown,
        }
    }
}

/// Why a lingering close stopped discarding and closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LingerEnd {
    /// The client closed its side (it read the answer, or gave up).
    Eof,
    /// The announced body was all read, or [`Linger::max_bytes`] was reached.
    Bytes,
    /// [`Linger::max_time`] passed.
    Time,
    /// The connection broke (a reset from the client, a TLS error).
    Broken,
}

/// What a lingering close discarded, and why it stopped (for tests and logs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lingered {
    /// The bytes read and thrown away.
    pub discarded: u64,
    /// Why it stopped.
    pub end: LingerEnd,
}

/// Closes `stream` after a refusal that was already written (with `Connection:
/// close`): shuts down its write side, discards what the client still sends (at
/// most `unread`'s bytes, and within `linger`'s bounds), then closes it by
/// dropping it. Works on plain and TLS streams alike (a TLS stream's shutdown
/// sends its `close_notify`).
pub async fn lingering_close<S>(mut stream: S, unread: Unread, linger: &Linger) -> Lingered
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let deadline = Instant::now() + linger.max_time;
    let budget = match unread {
        Unread::Bytes(n) => n.min(linger.max_bytes),
        Unread::Unknown => linger.max_bytes,
    };
    let mut lingered = Lingered {
        discarded: 0,
        end: LingerEnd::Bytes,
    };
    // The client reads the answer, then an end of stream: it need not wait for
    // the close, nor send the rest of its body.
    match tokio::time::timeout_at(deadline, stream.shutdown()).await {
        Ok(Ok(())) => {}
        Ok(Err(_)) => {
            lingered.end = LingerEnd::Broken;
            return lingered;
        }
        Err(_) => {
            lingered.end = LingerEnd::Time;
            return lingered;
        }
    }
    if budget == 0 {
        return lingered;
    }
    let mut scratch = vec![0u8; (budget as usize).min(16 * 1024)];
    while lingered.discarded < budget {
        let room = (budget - lingered.discarded).min(scratch.len() as u64) as usize;
        lingered.end =
            match tokio::time::timeout_at(deadline, stream.read(&mut scratch[..room])).await {
                Ok(Ok(0)) => LingerEnd::Eof,
                Ok(Ok(n)) => {
                    lingered.discarded += n as u64;
                    continue;
                }
                Ok(Err(_)) => LingerEnd::Broken,
                Err(_) => LingerEnd::Time,
            };
        return lingered;
    }
    lingered.end = LingerEnd::Bytes;
    lingered
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::DuplexStream;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap()
    }

    const SMALL: Linger = Linger {
        max_bytes: 100_000,
        max_time: Duration::from_secs(2),
    };

    /// Writes `n` bytes in pieces of 1000 (as long as the other side reads), and
    /// returns the client once done or once the server end is gone.
    async fn send(mut client: DuplexStream, n: usize) -> DuplexStream {
        let piece = [b'x'; 1000];
        let mut sent = 0;
        while sent < n {
            let k = piece.len().min(n - sent);
            if client.write_all(&piece[..k]).await.is_err() {
                break;
            }
            sent += k;
        }
        client
    }

    #[test]
    fn the_client_reads_the_answer_and_an_end_while_the_server_still_discards() {
        rt().block_on(async {
            let (mut client, mut server) = tokio::io::duplex(64 * 1024);
            server
                .write_all(b"HTTP/1.1 401 Unauthorized\r\n\r\n")
                .await
                .unwrap();
            let closing = tokio::spawn(lingering_close(server, Unread::Bytes(5000), &SMALL));
            // The answer, then the end of the stream, before a byte of the body.
            let mut answer = Vec::new();
            client.read_to_end(&mut answer).await.unwrap();
            assert_eq!(answer, b"HTTP/1.1 401 Unauthorized\r\n\r\n");
            let client = send(client, 5000).await;
            let lingered = closing.await.unwrap();
            assert_eq!(
                lingered,
                Lingered {
                    discarded: 5000,
                    end: LingerEnd::Bytes
                }
            );
            drop(client);
        });
    }

    #[test]
    fn it_stops_at_the_announced_body_and_waits_for_nothing_more() {
        rt().block_on(async {
            let (client, server) = tokio::io::duplex(64 * 1024);
            let t0 = Instant::now();
            // The client sends its 3000 bytes, then stays open without a word.
            let client = send(client, 3000).await;
            let lingered = lingering_close(server, Unread::Bytes(3000), &SMALL).await;
            assert_eq!(lingered.discarded, 3000);
            assert_eq!(lingered.end, LingerEnd::Bytes);
            // Paused time: it closed at once, not at its time bound.
            assert_eq!(t0.elapsed(), Duration::ZERO);
            drop(client);
        });
    }

    #[test]
    fn a_client_that_closes_early_ends_it_at_once() {
        rt().block_on(async {
            let (client, server) = tokio::io::duplex(64 * 1024);
            let client = send(client, 700).await;
            drop(client);
            let lingered = lingering_close(server, Unread::Bytes(1 << 30), &SMALL).await;
            assert_eq!(
                lingered,
                Lingered {
                    discarded: 700,
                    end: LingerEnd::Eof
                }
            );
        });
    }

    #[test]
    fn a_body_beyond_the_byte_bound_is_cut_off_at_it() {
        rt().block_on(async {
            for unread in [Unread::Bytes(10_000_000), Unread::Unknown] {
                let (client, server) = tokio::io::duplex(64 * 1024);
                let sender = tokio::spawn(send(client, 10_000_000));
                let lingered = lingering_close(server, unread, &SMALL).await;
                assert_eq!(
                    lingered,
                    Lingered {
                        discarded: SMALL.max_bytes,
                        end: LingerEnd::Bytes
                    },
                    "{unread:?}"
                );
                // The server end is gone: the sender's writes fail and it ends.
                drop(sender.await.unwrap());
            }
        });
    }

    #[test]
    fn a_trickling_client_is_cut_off_at_the_time_bound_not_before() {
        rt().block_on(async {
            let (mut client, server) = tokio::io::duplex(64 * 1024);
            let trickle = tokio::spawn(async move {
                // A byte every 300 ms, for ever (until the server end is gone).
                while client.write_all(b"x").await.is_ok() {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                }
            });
            let t0 = Instant::now();
            let lingered = lingering_close(server, Unread::Unknown, &SMALL).await;
            assert_eq!(lingered.end, LingerEnd::Time);
            // Bytes at 0, 300, ..., 1800 ms: seven, then the bound at 2 s.
            assert_eq!(lingered.discarded, 7);
            assert_eq!(t0.elapsed(), SMALL.max_time);
            trickle.await.unwrap();
        });
    }

    /// A server on a real loopback socket that refuses every request with `401`
    /// (its body unread) and closes as pado's control servers do.
    fn refusing_server() -> (crate::ServerThread, std::net::SocketAddr) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let patience = crate::Patience {
            head: Duration::from_secs(10),
            body_stall: Duration::from_secs(10),
        };
        let server = crate::ServerThread::serve_listener(
            "linger-test",
            listener,
            move |mut s, _| async move {
                let mut buf = Vec::new();
                let read = crate::read_request_gated(&mut s, &mut buf, &patience, |_| {
                    crate::Gate::Refuse(())
                })
                .await;
                if let Ok(Some(crate::Gated::Refused(req, ()))) = read {
                    let unread = Unread::after(&req, buf.len());
                    let mut head = crate::Head::new(401);
                    head.content_length(11).connection(Some("close"));
                    if crate::write_response(&mut s, head, b"wrong token", false)
                        .await
                        .is_ok()
                    {
                        lingering_close(s, unread, &LINGER).await;
                    }
                }
            },
        )
        .unwrap();
        (server, addr)
    }

    #[test]
    fn over_tcp_a_body_sent_with_the_head_does_not_reset_the_refusal() {
        use std::io::{Read, Write};
        let (server, addr) = refusing_server();
        // 1 MiB with the head in one write: far more than the head's read takes in,
        // so most of it is in the server's socket when it answers and closes.
        let len = 1 << 20;
        let mut req = format!("POST /x HTTP/1.1\r\nContent-Length: {len}\r\n\r\n").into_bytes();
        req.resize(req.len() + len, b'x');
        let mut c = std::net::TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        c.write_all(&req).unwrap();
        let mut out = Vec::new();
        let read = c.read_to_end(&mut out);
        let text = String::from_utf8_lossy(&out);
        assert!(read.is_ok(), "{read:?} after {text:?}");
        assert!(
            text.starts_with("HTTP/1.1 401 Unauthorized\r\n")
                && text.ends_with("\r\n\r\nwrong token"),
            "{text}"
        );
        server.shutdown();
    }

    #[test]
    fn the_unread_part_is_what_the_head_announced_less_what_came_with_it() {
        let req = |headers: &[(&str, &str)]| Request::in_process("POST", "/x", headers);
        let len = [("Content-Length", "1000")];
        assert_eq!(Unread::after(&req(&len), 0), Unread::Bytes(1000));
        assert_eq!(Unread::after(&req(&len), 400), Unread::Bytes(600));
        // A pipelined request after the body: nothing of this body is left.
        assert_eq!(Unread::after(&req(&len), 1500), Unread::Bytes(0));
        assert_eq!(Unread::after(&req(&[]), 0), Unread::Bytes(0));
        let chunked = [("Transfer-Encoding", "chunked")];
        assert_eq!(Unread::after(&req(&chunked), 0), Unread::Unknown);
        let bad = [("Content-Length", "-1")];
        assert_eq!(Unread::after(&req(&bad), 0), Unread::Unknown);
    }
}
