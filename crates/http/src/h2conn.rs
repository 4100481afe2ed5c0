//! HTTP/2 connections of one worker thread, shared by its VUs (h2load's model: a
//! few connections, many streams each). A request takes a stream slot on the first
//! open connection with room (fewer streams in flight than `max_streams` and than
//! the server's `SETTINGS_MAX_CONCURRENT_STREAMS`); when every connection is full a
//! new one is opened. `max_streams: 1` therefore gives one connection per VU, as
//! HTTP/1.1 does.
//!
//! Everything here lives on one worker thread: `Rc`, `Cell` and `RefCell`, no
//! locks of pado's own. Each connection's frames are driven by a task of its own on
//! the worker's `LocalSet` ([`tokio::task::spawn_local`]).

use std::cell::{Cell, RefCell};
use std::future::Future as _;
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use h2::client::SendRequest;
use pado_metrics::ErrorKind;
use tokio::sync::Notify;

use crate::h2sniff::{FirstBytes, H2C_UNSUPPORTED};

use crate::conn::{
    connect_stream, Conn, ConnectError, Origin, Protocol, SetupTimes, Stream, READ_BUF,
};

/// Where a connection stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// TCP, TLS or the HTTP/2 preface under way; its first VU is opening it.
    Connecting,
    /// Streams can be opened.
    Ready,
    /// The server sent `GOAWAY` (seen on a refused stream): no new streams; the
    /// ones in flight finish.
    Draining,
    /// Gone (failed to open, or its driver ended).
    Closed,
}

/// One HTTP/2 connection of the pool.
pub(crate) struct H2Conn {
    state: Cell<State>,
    send: RefCell<Option<SendRequest<Bytes>>>,
    /// Streams taken (in flight, or reserved by a VU about to send).
    active: Cell<usize>,
    /// The server's `SETTINGS_MAX_CONCURRENT_STREAMS` (unbounded until known).
    server_limit: Cell<usize>,
    /// Why it failed to open, for the VUs that waited on it.
    failure: Cell<Option<ConnectError>>,
    /// Woken when it leaves `Connecting`.
    opened: Notify,
    /// Raised when the server's first bytes were an HTTP/1.1 response: it does not
    /// speak HTTP/2 on this port ([`crate::h2sniff`]).
    answered_http1: Rc<Cell<bool>>,
}

impl H2Conn {
    fn new() -> Self {
        H2Conn {
            state: Cell::new(State::Connecting),
            send: RefCell::new(None),
            active: Cell::new(0),
            server_limit: Cell::new(usize::MAX),
            failure: Cell::new(None),
            opened: Notify::new(),
            answered_http1: Rc::new(Cell::new(false)),
        }
    }

    /// Whether the server answered in HTTP/1.1 instead of HTTP/2.
    pub(crate) fn answered_http1(&self) -> bool {
        self.answered_http1.get()
    }

    /// A handle to open a stream with (`None` once closed).
    pub(crate) fn sender(&self) -> Option<SendRequest<Bytes>> {
        self.send.borrow().clone()
    }

    /// The server said `GOAWAY`: new requests go elsewhere.
    pub(crate) fn going_away(&self) {
        if self.state.get() == State::Ready {
            self.state.set(State::Draining);
        }
    }

    /// Whether the server said `GOAWAY` (or the connection is gone).
    pub(crate) fn gone_away(&self) -> bool {
        matches!(self.state.get(), State::Draining | State::Closed)
    }

    fn close(&self) {
        self.state.set(State::Closed);
        self.send.borrow_mut().take();
        self.opened.notify_waiters();
    }
}

/// A stream slot on a connection, given back when dropped.
pub struct StreamSlot {
    pub(crate) conn: Rc<H2Conn>,
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.conn
            .active
            .set(self.conn.active.get().saturating_sub(1));
    }
}

/// Closes a connection whose opening was abandoned (its VU's request timed out or
/// the run was cut), so VUs waiting on it do not wait forever.
struct OpenGuard(Rc<H2Conn>);

impl Drop for OpenGuard {
    fn drop(&mut self) {
        if self.0.state.get() == State::Connecting {
            self.0.close();
        }
    }
}

/// The HTTP/2 connections of one worker to one origin.
pub struct H2Pool {
    max_streams: usize,
    conns: RefCell<Vec<Rc<H2Conn>>>,
    /// `Auto` over https and the server chose HTTP/1.1: this origin is HTTP/1.1.
    http1: Cell<bool>,
    /// Connections opened (for tests and debugging).
    opened: Cell<u64>,
}

/// What a request got from the pool.
pub enum Acquired {
    /// A stream slot on an open connection; the setup times when this request
    /// opened it.
    Stream(StreamSlot, Option<SetupTimes>),
    /// The origin speaks HTTP/1.1 (`auto` over https, and the server chose it): the
    /// request goes on the VU's own connection, this one if it was just opened.
    Http1(Option<(Conn, SetupTimes)>),
    /// The connection this request needed could not be opened.
    Failed(ConnectError),
}

impl H2Pool {
    /// A pool with at most `max_streams` streams per connection (at least 1).
    pub fn new(max_streams: u32) -> Self {
        H2Pool {
            max_streams: max_streams.max(1) as usize,
            conns: RefCell::new(Vec::new()),
            http1: Cell::new(false),
            opened: Cell::new(0),
        }
    }

    /// Connections opened so far.
    pub fn connections_opened(&self) -> u64 {
        self.opened.get()
    }

    /// Whether the origin was found to speak only HTTP/1.1 (`auto`).
    pub fn is_http1(&self) -> bool {
        self.http1.get()
    }

    /// Take a stream slot on a connection to `origin`, opening one when all are
    /// full. `budget` bounds the connection's setup. Waiting for a connection another
    /// VU is opening is the caller's `blocked` time.
    pub async fn acquire(&self, origin: &Origin, budget: Duration) -> Acquired {
        loop {
            if self.http1.get() {
                return Acquired::Http1(None);
            }
            let chosen = {
                let mut conns = self.conns.borrow_mut();
                conns.retain(|c| c.state.get() != State::Closed);
                pick(
                    conns
                        .iter()
                        .map(|c| (c.state.get(), c.active.get(), c.server_limit.get())),
                    self.max_streams,
                )
                .map(|i| conns[i].clone())
            };
            if let Some(c) = chosen {
                c.active.set(c.active.get() + 1);
                let slot = StreamSlot { conn: c.clone() };
                if c.state.get() == State::Connecting {
                    c.opened.notified().await;
                }
                match c.state.get() {
                    State::Ready => return Acquired::Stream(slot, None),
                    _ => match c.failure.get() {
                        Some(e) => return Acquired::Failed(e),
                        None => continue,
                    },
                }
            }
            let c = Rc::new(H2Conn::new());
            c.active.set(1);
            self.conns.borrow_mut().push(c.clone());
            self.opened.set(self.opened.get() + 1);
            let slot = StreamSlot { conn: c.clone() };
            let guard = OpenGuard(c.clone());
            // Boxed: opening (TCP, TLS, preface) is a large future but rare; inline it
            // would make every request's future, moved on each call, 1.4 KB bigger.
            let opened = Box::pin(open(origin, budget, c.answered_http1.clone())).await;
            drop(guard);
            return match opened {
                Ok(Opened::H2(send, times, mut connection)) => {
                    *c.send.borrow_mut() = Some(send);
                    c.state.set(State::Ready);
                    c.opened.notify_waiters();
                    let conn = c.clone();
                    // The connection's driver: frames in and out, and the server's
                    // stream limit read as its settings arrive.
                    tokio::task::spawn_local(async move {
                        let _ = std::future::poll_fn(|cx| {
                            let r = Pin::new(&mut *connection).poll(cx);
                            conn.server_limit
                                .set(connection.max_concurrent_send_streams());
                            r
                        })
                        .await;
                        conn.close();
                    });
                    Acquired::Stream(slot, Some(times))
                }
                Ok(Opened::Http1(h1, times)) => {
                    self.http1.set(true);
                    c.close();
                    Acquired::Http1(Some((h1, times)))
                }
                Err(e) => {
                    c.failure.set(Some(e));
                    c.close();
                    Acquired::Failed(e)
                }
            };
        }
    }
}

/// The connection a new stream goes on: the first that is opening or open, not
/// draining, with fewer streams than `max_streams` and the server's limit; `None`
/// when every one is full (a new connection is then opened).
fn pick(conns: impl Iterator<Item = (State, usize, usize)>, max_streams: usize) -> Option<usize> {
    conns
        .enumerate()
        .find(|(_, (state, active, server_limit))| {
            matches!(state, State::Connecting | State::Ready)
                && *active < max_streams.min((*server_limit).max(1))
        })
        .map(|(i, _)| i)
}

enum Opened {
    H2(
        SendRequest<Bytes>,
        SetupTimes,
        Box<h2::client::Connection<FirstBytes<Stream>, Bytes>>,
    ),
    Http1(Conn, SetupTimes),
}

/// Open a connection: TCP, TLS with ALPN, the HTTP/2 preface and settings.
async fn open(
    origin: &Origin,
    budget: Duration,
    answered_http1: Rc<Cell<bool>>,
) -> Result<Opened, ConnectError> {
    let start = std::time::Instant::now();
    let (stream, mut times) = connect_stream(origin, origin.h2_tls.as_ref(), budget)
        .await
        .map_err(|e| match e.reason {
            Some(crate::conn::NO_COMMON_ALPN) => ConnectError {
                kind: ErrorKind::H2NotNegotiated,
                reason: Some("the server does not offer h2 in ALPN (HTTP/1.1 only?)"),
            },
            _ => e,
        })?;
    if origin.tls.is_some() && stream.alpn() != Some(b"h2") {
        if origin.protocol == Protocol::Auto {
            let conn = Conn {
                stream,
                buf: Vec::with_capacity(READ_BUF),
                idle_since: std::time::Instant::now(),
            };
            return Ok(Opened::Http1(conn, times));
        }
        return Err(ConnectError {
            kind: ErrorKind::H2NotNegotiated,
            reason: Some(match stream.alpn() {
                Some(b"http/1.1") => "the server chose HTTP/1.1 in ALPN (it does not offer h2)",
                Some(_) => "the server chose another protocol than h2 in ALPN",
                None => "the server chose no protocol in ALPN (it does not offer h2)",
            }),
        });
    }
    let t_h2 = std::time::Instant::now();
    let left = budget.saturating_sub(start.elapsed());
    let hs = h2::client::Builder::new()
        // The same cap as an HTTP/1.1 head: a server's header list (or a flood of
        // CONTINUATION frames carrying one) is refused past it, not buffered; h2's
        // own default is 16 MiB per stream.
        .max_header_list_size(crate::response::MAX_HEAD as u32)
        .initial_window_size(1 << 20)
        .initial_connection_window_size(1 << 24)
        .handshake::<_, Bytes>(FirstBytes::new(stream, answered_http1.clone()));
    let (send, connection) = match tokio::time::timeout(left, hs).await {
        Err(_) => return Err(ErrorKind::Timeout.into()),
        Ok(Err(_)) if answered_http1.get() => {
            return Err(ConnectError {
                kind: ErrorKind::H2cUnsupported,
                reason: Some(H2C_UNSUPPORTED),
            })
        }
        Ok(Err(e)) => {
            return Err(ConnectError {
                kind: if e.is_io() {
                    ErrorKind::Reset
                } else {
                    ErrorKind::Protocol
                },
                reason: Some("the HTTP/2 connection preface failed"),
            })
        }
        Ok(Ok(x)) => x,
    };
    // The preface is part of setting the connection up.
    times.connecting += t_h2.elapsed();
    Ok(Opened::H2(send, times, Box::new(connection)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_fill_the_first_connection_with_room() {
        use State::*;
        let m = 10;
        assert_eq!(pick(std::iter::empty(), m), None, "none yet: open one");
        assert_eq!(pick([(Ready, 3, usize::MAX)].into_iter(), m), Some(0));
        assert_eq!(pick([(Ready, 10, usize::MAX)].into_iter(), m), None);
        assert_eq!(
            pick(
                [(Ready, 10, usize::MAX), (Connecting, 4, usize::MAX)].into_iter(),
                m
            ),
            Some(1),
            "a connection being opened takes streams too"
        );
        assert_eq!(
            pick([(Draining, 0, 100), (Ready, 9, 100)].into_iter(), m),
            Some(1),
            "a draining connection takes no new stream"
        );
        assert_eq!(pick([(Closed, 0, 100)].into_iter(), m), None);
    }

    #[test]
    fn the_server_limit_bounds_streams_below_max_streams() {
        use State::*;
        assert_eq!(
            pick([(Ready, 2, 2), (Ready, 1, 2)].into_iter(), 100),
            Some(1)
        );
        assert_eq!(pick([(Ready, 2, 2)].into_iter(), 100), None);
        // A server limit of 0 is read as 1 (a stream at a time), not as "never".
        assert_eq!(pick([(Ready, 0, 0)].into_iter(), 100), Some(0));
    }

    #[test]
    fn one_stream_per_connection_gives_a_connection_per_request_in_flight() {
        use State::*;
        assert_eq!(pick([(Ready, 1, usize::MAX)].into_iter(), 1), None);
        assert_eq!(pick([(Ready, 1, 9), (Ready, 0, 9)].into_iter(), 1), Some(1));
    }
}
