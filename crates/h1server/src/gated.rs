//! Reading a request on a server that strangers can reach (`pado agent`, a
//! generator pod): the head is judged before a byte of the body is read, and
//! neither the head nor the body may keep the connection waiting without end.
//!
//! A plain [`crate::read_request`] reads a body of up to its limit before the
//! server sees who sent it: six connections each announcing 256 MiB took a server
//! to 1.5 GB before any of them was refused. Here the server's gate sees the head
//! first and either refuses it (the body stays unread, and the connection must be
//! closed after the answer, with [`crate::lingering_close`] so that a body the
//! client sends anyway does not reset the answer away) or says how large a body
//! this request may have.

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;

use crate::request::{read_body, read_head, ReadError, Request, Waits};

/// How long a connection may keep the server waiting.
#[derive(Clone, Copy, Debug)]
pub struct Patience {
    /// From the start of a read (a kept-alive connection's idle time included) to
    /// the end of the request's head: a half-sent head is closed after it.
    pub head: Duration,
    /// How long the body may go without a byte arriving (a large body on a slow
    /// link keeps going as long as it moves).
    pub body_stall: Duration,
}

/// The server's word on a request's head.
#[derive(Debug)]
pub enum Gate<R> {
    /// Read the body, refusing one larger than `max_body` bytes with `413`.
    Read {
        /// The largest body this request may carry.
        max_body: u64,
    },
    /// Do not read the body: answer with `R` and close the connection.
    Refuse(R),
}

/// A request read through a gate.
#[derive(Debug)]
pub enum Gated<R> {
    /// The whole request, body included.
    Read(Request),
    /// The head only (its body is left unread) and the gate's refusal; the
    /// connection must be closed once the refusal is answered, by
    /// [`crate::lingering_close`] with [`crate::Unread::after`] this request.
    Refused(Request, R),
}

/// Reads one request from the connection as [`crate::read_request`] does, but
/// within `patience`, and with `gate` judging its head before its body is read
/// (and before a `100 Continue` is sent). `Ok(None)` on a clean EOF between
/// requests; a peer too slow for `patience` is [`ReadError::Io`].
pub async fn read_request_gated<S, R>(
    s: &mut S,
    buf: &mut Vec<u8>,
    patience: &Patience,
    gate: impl FnOnce(&Request) -> Gate<R>,
) -> Result<Option<Gated<R>>, ReadError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let waits = Waits {
        head_by: Some(Instant::now() + patience.head),
        body_stall: Some(patience.body_stall),
    };
    let Some((req, head_len)) = read_head(s, buf, &waits).await? else {
        return Ok(None);
    };
    match gate(&req) {
        Gate::Refuse(r) => Ok(Some(Gated::Refused(req, r))),
        Gate::Read { max_body } => read_body(s, buf, req, head_len, max_body, &waits)
            .await
            .map(|r| Some(Gated::Read(r))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap()
    }

    const PATIENCE: Patience = Patience {
        head: Duration::from_secs(10),
        body_stall: Duration::from_secs(5),
    };

    #[test]
    fn a_refused_head_leaves_its_announced_body_unread() {
        rt().block_on(async {
            let (mut client, mut server) = tokio::io::duplex(64 * 1024);
            // A huge body announced, none of it sent: a reader of the body would wait.
            client
                .write_all(b"POST /job HTTP/1.1\r\nContent-Length: 268435456\r\nExpect: 100-continue\r\n\r\n")
                .await
                .unwrap();
            let mut buf = Vec::new();
            let seen = std::cell::Cell::new(0u64);
            let r = read_request_gated(&mut server, &mut buf, &PATIENCE, |req| {
                seen.set(req.header("content-length").unwrap().parse().unwrap());
                Gate::Refuse(401u16)
            })
            .await;
            assert_eq!(seen.get(), 268435456);
            match r {
                Ok(Some(Gated::Refused(req, 401))) => {
                    assert_eq!(req.path, "/job");
                    assert!(req.body.is_empty());
                }
                other => panic!("{other:?}"),
            }
            // No `100 Continue` went out: the client was never invited to send.
            drop(server);
            let mut out = Vec::new();
            tokio::io::AsyncReadExt::read_to_end(&mut client, &mut out)
                .await
                .unwrap();
            assert!(out.is_empty(), "{}", String::from_utf8_lossy(&out));
        });
    }

    #[test]
    fn an_accepted_head_gets_its_body_within_the_gate_s_limit() {
        rt().block_on(async {
            let (mut client, mut server) = tokio::io::duplex(64 * 1024);
            client
                .write_all("POST /x HTTP/1.1\r\nContent-Length: 6\r\n\r\n파도".as_bytes())
                .await
                .unwrap();
            let mut buf = Vec::new();
            let r = read_request_gated(&mut server, &mut buf, &PATIENCE, |_| Gate::<()>::Read {
                max_body: 6,
            })
            .await;
            match r {
                Ok(Some(Gated::Read(req))) => assert_eq!(req.body, "파도".as_bytes()),
                other => panic!("{other:?}"),
            }
            client
                .write_all(b"POST /x HTTP/1.1\r\nContent-Length: 7\r\n\r\n")
                .await
                .unwrap();
            let r = read_request_gated(&mut server, &mut buf, &PATIENCE, |_| Gate::<()>::Read {
                max_body: 6,
            })
            .await;
            assert!(matches!(r, Err(ReadError::Malformed(413, _))), "{r:?}");
        });
    }

    #[test]
    fn a_half_sent_head_is_given_up_at_its_deadline_not_before() {
        rt().block_on(async {
            let (mut client, mut server) = tokio::io::duplex(64 * 1024);
            client
                .write_all(b"GET /status HTTP/1.1\r\nHo")
                .await
                .unwrap();
            let t0 = Instant::now();
            let mut buf = Vec::new();
            let r = read_request_gated(&mut server, &mut buf, &PATIENCE, |_| Gate::<()>::Read {
                max_body: 0,
            })
            .await;
            assert!(matches!(r, Err(ReadError::Io)), "{r:?}");
            // Paused time: exactly the head's patience passed, no more, no less.
            assert_eq!(t0.elapsed(), PATIENCE.head);
        });
    }

    #[test]
    fn a_stalled_body_is_given_up_but_a_moving_one_is_not() {
        rt().block_on(async {
            let (mut client, mut server) = tokio::io::duplex(64 * 1024);
            let writer = tokio::spawn(async move {
                client
                    .write_all(b"POST /x HTTP/1.1\r\nContent-Length: 4\r\n\r\nab")
                    .await
                    .unwrap();
                // Slower than the head's patience in all, but never stalled for 5 s.
                tokio::time::sleep(Duration::from_secs(4)).await;
                client.write_all(b"c").await.unwrap();
                tokio::time::sleep(Duration::from_secs(4)).await;
                client.write_all(b"d").await.unwrap();
                tokio::time::sleep(Duration::from_secs(4)).await;
                client
                    .write_all(b"POST /y HTTP/1.1\r\nContent-Length: 4\r\n\r\nab")
                    .await
                    .unwrap();
                client
            });
            let gate = |_: &Request| Gate::<()>::Read { max_body: 4 };
            let mut buf = Vec::new();
            let r = read_request_gated(&mut server, &mut buf, &PATIENCE, gate).await;
            assert!(
                matches!(&r, Ok(Some(Gated::Read(q))) if q.body == b"abcd"),
                "{r:?}"
            );
            let t0 = Instant::now();
            let r = read_request_gated(&mut server, &mut buf, &PATIENCE, gate).await;
            assert!(matches!(r, Err(ReadError::Io)), "{r:?}");
            // 4 s until the second head, then the body stalls for its 5 s.
            assert_eq!(t0.elapsed(), Duration::from_secs(9));
            drop(writer.await.unwrap());
        });
    }
}
