//! A WebSocket echo server for pado's tests: it counts handshakes and messages
//! both ways (exactly, as they are read and written), and behaves as the
//! handshake's query asks, so a test knows the truth pado's figures must match.
//!
//! | query | behaviour |
//! |---|---|
//! | (none) | echo every text or binary message at once |
//! | `delay_ms=N` | echo each message N ms after it was read (reading goes on meanwhile) |
//! | `push_ms=P[&push_count=C]` | also send `tick K` (K = 1, 2...) every P ms, C times (default: until closed) |
//! | `close_after=N` | close the session (close frame 1000) once N messages were read |
//! | `refuse=S` | answer the handshake with status S instead of 101 |
//!
//! A text message holding `"type":"join"` is answered with
//! `{"type":"joined","id":"m-<session>"}` instead of its echo.

use std::collections::HashMap;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, watch};
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::StatusCode;
use tokio_tungstenite::tungstenite::Message;

/// What the server counted since it started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WsStats {
    /// Handshakes answered with 101.
    pub sessions: u64,
    /// Handshakes refused on request (`refuse=S`).
    pub refused: u64,
    /// Data messages read from clients.
    pub received: u64,
    /// Data messages written to clients (echoes, join answers, ticks).
    pub sent: u64,
    /// Sessions the server closed on request (`close_after`).
    pub closed_early: u64,
}

#[derive(Default)]
struct Counters {
    sessions: AtomicU64,
    refused: AtomicU64,
    received: AtomicU64,
    sent: AtomicU64,
    closed_early: AtomicU64,
}

/// A running WebSocket test server on 127.0.0.1; stopped when dropped.
pub struct WsServer {
    addr: SocketAddr,
    tls: bool,
    counters: Arc<Counters>,
    stop: watch::Sender<bool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl WsServer {
    /// Start a plain (`ws://`) server on an ephemeral port.
    ///
    /// # Panics
    /// If it cannot start (no loopback, no threads): tests cannot go on.
    pub fn start() -> WsServer {
        WsServer::try_start(false).expect("pado-testkit: cannot start WebSocket server")
    }

    /// Start a `wss://` server with a fresh self-signed certificate (clients
    /// need `insecure`).
    ///
    /// # Panics
    /// Like [`WsServer::start`].
    pub fn start_tls() -> WsServer {
        WsServer::try_start(true).expect("pado-testkit: cannot start WebSocket server")
    }

    fn try_start(tls: bool) -> io::Result<WsServer> {
        let listener = std::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let acceptor = if tls {
            Some(pado_h1server::tls::make_acceptor(None)?.0)
        } else {
            None
        };
        let counters = Arc::new(Counters::default());
        let (stop, stopped) = watch::channel(false);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .thread_name("pado-testkit-ws")
            .build()?;
        let c = Arc::clone(&counters);
        let thread = std::thread::Builder::new()
            .name("pado-testkit-ws".into())
            .spawn(move || {
                runtime.block_on(accept_loop(listener, acceptor, c, stopped));
                runtime.shutdown_timeout(Duration::from_secs(1));
            })?;
        Ok(WsServer {
            addr,
            tls,
            counters,
            stop,
            thread: Some(thread),
        })
    }

    /// `ws://127.0.0.1:PORT` (or `wss://`), no trailing slash.
    pub fn base_url(&self) -> String {
        format!("{}://{}", if self.tls { "wss" } else { "ws" }, self.addr)
    }

    /// `http://127.0.0.1:PORT` (or `https://`): a scenario `target` whose
    /// `ws:` paths reach this server.
    pub fn http_base_url(&self) -> String {
        format!(
            "{}://{}",
            if self.tls { "https" } else { "http" },
            self.addr
        )
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> WsStats {
        let c = &self.counters;
        WsStats {
            sessions: c.sessions.load(Ordering::SeqCst),
            refused: c.refused.load(Ordering::SeqCst),
            received: c.received.load(Ordering::SeqCst),
            sent: c.sent.load(Ordering::SeqCst),
            closed_early: c.closed_early.load(Ordering::SeqCst),
        }
    }
}

impl Drop for WsServer {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn accept_loop(
    listener: std::net::TcpListener,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    counters: Arc<Counters>,
    mut stopped: watch::Receiver<bool>,
) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            _ = stopped.changed() => break,
            r = listener.accept() => {
                let Ok((tcp, _)) = r else { continue };
                let _ = tcp.set_nodelay(true);
                let c = Arc::clone(&counters);
                let acceptor = acceptor.clone();
                tasks.spawn(async move {
                    match acceptor {
                        Some(a) => {
                            if let Ok(s) = a.accept(tcp).await {
                                session(s, c).await;
                            }
                        }
                        None => session(tcp, c).await,
                    }
                });
            }
        }
    }
    tasks.abort_all();
}

/// The session's behaviour, from the handshake's query.
#[derive(Default)]
struct Behaviour {
    delay: Duration,
    push: Option<(Duration, Option<u64>)>,
    close_after: Option<u64>,
    refuse: Option<u16>,
}

fn behaviour(query: &str) -> Behaviour {
    let q: HashMap<&str, u64> = query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .filter_map(|(k, v)| Some((k, v.parse().ok()?)))
        .collect();
    Behaviour {
        delay: Duration::from_millis(q.get("delay_ms").copied().unwrap_or(0)),
        push: q
            .get("push_ms")
            .map(|&ms| (Duration::from_millis(ms), q.get("push_count").copied())),
        close_after: q.get("close_after").copied(),
        refuse: q
            .get("refuse")
            .and_then(|&s| u16::try_from(s).ok())
            .filter(|s| *s != 101),
    }
}

// The handshake callback's error type is tungstenite's (`ErrorResponse`), large or not.
#[allow(clippy::result_large_err)]
async fn session<S>(stream: S, counters: Arc<Counters>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let mut b = Behaviour::default();
    let callback = |req: &Request, resp: Response| -> Result<Response, ErrorResponse> {
        b = behaviour(req.uri().query().unwrap_or(""));
        match b.refuse {
            Some(code) => {
                let mut e = ErrorResponse::new(Some(format!("refused with {code}")));
                *e.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::FORBIDDEN);
                Err(e)
            }
            None => Ok(resp),
        }
    };
    let ws = match tokio_tungstenite::accept_hdr_async(stream, callback).await {
        Ok(ws) => ws,
        Err(_) => {
            if b.refuse.is_some() {
                counters.refused.fetch_add(1, Ordering::SeqCst);
            }
            return;
        }
    };
    let id = counters.sessions.fetch_add(1, Ordering::SeqCst) + 1;
    let (mut sink, mut source) = ws.split();
    // Everything written goes through one writer task, so echoes delayed on
    // their own tasks and ticks interleave safely; `None` closes.
    let (tx, mut rx) = mpsc::unbounded_channel::<Option<Message>>();
    let wc = Arc::clone(&counters);
    let writer = tokio::spawn(async move {
        while let Some(m) = rx.recv().await {
            match m {
                Some(m) => {
                    if sink.send(m).await.is_err() {
                        break;
                    }
                    wc.sent.fetch_add(1, Ordering::SeqCst);
                }
                None => {
                    let _ = sink.close().await;
                    break;
                }
            }
        }
    });
    let ticker = b.push.map(|(every, count)| {
        let tx = tx.clone();
        tokio::spawn(async move {
            let mut k = 0u64;
            loop {
                tokio::time::sleep(every).await;
                k += 1;
                if tx.send(Some(Message::text(format!("tick {k}")))).is_err() {
                    break;
                }
                if count.is_some_and(|c| k >= c) {
                    break;
                }
            }
        })
    });
    let mut read = 0u64;
    while let Some(Ok(m)) = source.next().await {
        let reply = match m {
            Message::Text(t) if t.as_str().contains("\"type\":\"join\"") => {
                Message::text(format!("{{\"type\":\"joined\",\"id\":\"m-{id}\"}}"))
            }
            Message::Text(_) | Message::Binary(_) => m,
            Message::Close(_) => break,
            _ => continue,
        };
        counters.received.fetch_add(1, Ordering::SeqCst);
        read += 1;
        if b.delay.is_zero() {
            let _ = tx.send(Some(reply));
        } else {
            let tx = tx.clone();
            let d = b.delay;
            tokio::spawn(async move {
                tokio::time::sleep(d).await;
                let _ = tx.send(Some(reply));
            });
        }
        if b.close_after.is_some_and(|n| read >= n) {
            counters.closed_early.fetch_add(1, Ordering::SeqCst);
            if let Some(t) = &ticker {
                t.abort();
            }
            let _ = tx.send(None);
            break;
        }
    }
    if let Some(t) = ticker {
        t.abort();
    }
    // The client closed (or we did): answer with our close frame, which also
    // flushes what is queued; delayed echoes still due are dropped.
    let _ = tx.send(None);
    let _ = tokio::time::timeout(Duration::from_secs(5), writer).await;
}
