//! Serving: the accept loop (h1server's) with the fault tickers and CPU sampler
//! beside it, around again after each restart (see [`restart`](super::restart)),
//! and one connection's request/response loop.

use std::future::Future;
use std::io;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::task::JoinSet;

use super::response::Response;
use super::{compression, websocket, App};
use crate::http::{connection_value, read_request, write_response, Head, ReadError, Server};

/// A connection idle this long between requests is closed.
const IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// The largest request body the service reads (`413` above): bodies are JSON
/// documents of a few hundred bytes, and memory must stay bounded whatever a client
/// sends.
pub(super) const MAX_REQUEST_BODY: u64 = 1024 * 1024;

/// Serves until `shutdown`, with the fault tickers and CPU sampler beside the
/// connections; then closes the pools (waking queued requests), drops every
/// connection and stops the background tasks. A restart asked for meanwhile
/// drops every connection, closes the listener for its length and serves again
/// on the same address.
pub(crate) async fn serve(
    app: Arc<App>,
    server: Server,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let addr = server.local_addr()?;
    let mut background: JoinSet<()> = JoinSet::new();
    background.spawn(stall_ticker(app.clone()));
    background.spawn(cpu_sampler(app.clone()));
    let one_shot = {
        let f = app.faults();
        f.stall_ms > 0 && f.stall_every_s == 0.0
    };
    if one_shot {
        app.stall_now(Duration::from_millis(app.faults().stall_ms));
    }
    tokio::pin!(shutdown);
    let mut listener = Some(server);
    while let Some(server) = listener.take() {
        // The pool-leak ticker starts afresh with each (re)started service.
        let pool_leak = tokio::spawn(pool_leak_ticker(app.clone()));
        let restart: Mutex<Option<Duration>> = Mutex::new(None);
        let stop = async {
            tokio::select! {
                _ = shutdown.as_mut() => {
                    app.workers.close();
                    app.db.close();
                    app.llm.close();
                }
                len = app.restart_requested() => {
                    *pado_base::lock(&restart) = Some(len);
                }
            }
        };
        server
            .serve(stop, |stream, _| {
                let app = app.clone();
                async move {
                    let _open = OpenConnection::new(&app);
                    serve_wire(&app, stream).await;
                }
            })
            .await;
        pool_leak.abort();
        // Cancelled before a restart returns the leaked connections, so a leak it
        // was waiting to take cannot take one of them.
        let _ = pool_leak.await;
        let restart = restart.into_inner().unwrap_or_else(|e| e.into_inner());
        if let Some(len) = restart {
            listener = app.restart(addr, len, &mut shutdown).await;
            if listener.is_none() {
                app.workers.close();
                app.db.close();
                app.llm.close();
            }
        }
    }
    background.shutdown().await;
    Ok(())
}

/// Counts an open connection in `pado_target_connections` for as long as it lives,
/// however its task ends (a restart drops it mid-request).
struct OpenConnection(Arc<App>);

impl OpenConnection {
    fn new(app: &Arc<App>) -> OpenConnection {
        app.connections.fetch_add(1, Ordering::Relaxed);
        app.connections_total.fetch_add(1, Ordering::Relaxed);
        OpenConnection(app.clone())
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.connections.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The connection-leak fault: every `pool_leak_every_s` one DB connection is
/// taken and never given back (until a restart returns them all).
async fn pool_leak_ticker(app: Arc<App>) {
    loop {
        let every = app.faults().pool_leak_every_s;
        if every > 0.0 {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs_f64(every)) => {
                    if app.db.leak_one().await.is_err() {
                        return;
                    }
                }
                _ = app.pool_leak_changed.notified() => {}
            }
        } else {
            app.pool_leak_changed.notified().await;
        }
    }
}

async fn stall_ticker(app: Arc<App>) {
    loop {
        let f = app.faults();
        if f.stall_ms > 0 && f.stall_every_s > 0.0 {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs_f64(f.stall_every_s)) => {
                    app.stall_now(Duration::from_millis(f.stall_ms));
                }
                _ = app.faults_changed.notified() => {}
            }
        } else {
            app.faults_changed.notified().await;
        }
    }
}

async fn cpu_sampler(app: Arc<App>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        app.sampler.sample();
    }
}

/// What a new connection speaks, told from its first bytes.
#[derive(Debug, PartialEq, Eq)]
enum Wire {
    /// A TLS handshake (a record of type 22).
    Tls,
    /// HTTP/2's connection preface (`PRI * HTTP/2.0`): h2c with prior knowledge.
    H2,
    /// Anything else: HTTP/1.x (a WebSocket upgrade among it).
    Http1,
}

/// The HTTP/2 connection preface's first bytes; no HTTP/1.1 method starts so.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Tells what `peeked` (the connection's first bytes so far) is, or `None` when
/// more bytes are needed to tell.
fn wire_of(peeked: &[u8]) -> Option<Wire> {
    match peeked.first()? {
        0x16 => Some(Wire::Tls),
        _ if peeked.len() >= 3 || !H2_PREFACE.starts_with(peeked) => {
            Some(if peeked.starts_with(&H2_PREFACE[..3]) {
                Wire::H2
            } else {
                Wire::Http1
            })
        }
        _ => None,
    }
}

/// Peeks at a new connection's first bytes (without taking them) until it can
/// tell what it speaks; `None` when the client closes or stays silent.
async fn sniff(stream: &TcpStream) -> Option<Wire> {
    let look = async {
        let mut b = [0u8; 3];
        loop {
            let n = stream.peek(&mut b).await.ok()?;
            if n == 0 {
                return None;
            }
            if let Some(w) = wire_of(&b[..n]) {
                return Some(w);
            }
            // Fewer bytes than it takes to tell: wait for the rest.
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    };
    tokio::time::timeout(IDLE_TIMEOUT, look)
        .await
        .ok()
        .flatten()
}

/// How long a TLS handshake may take.
const TLS_HANDSHAKE: Duration = Duration::from_secs(10);

/// Serves a connection in what it speaks: HTTP/1.1, h2c, or TLS (with `--tls`)
/// then HTTP/2 or HTTP/1.1 as ALPN chose.
async fn serve_wire(app: &Arc<App>, stream: TcpStream) {
    match sniff(&stream).await {
        None => {}
        Some(Wire::H2) => super::h2::serve(app, stream).await,
        Some(Wire::Tls) if app.tls.is_some() => {
            let Some(acceptor) = app.tls.clone() else {
                return;
            };
            let Ok(Ok(tls)) = tokio::time::timeout(TLS_HANDSHAKE, acceptor.accept(stream)).await
            else {
                return;
            };
            if tls.get_ref().1.alpn_protocol() == Some(b"h2") {
                super::h2::serve(app, tls).await;
            } else {
                serve_connection(app, tls).await;
            }
        }
        Some(_) => serve_connection(app, stream).await,
    }
}

async fn serve_connection<S>(app: &Arc<App>, mut stream: S)
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    let mut buf: Vec<u8> = Vec::with_capacity(8 * 1024);
    loop {
        let req = match tokio::time::timeout(
            IDLE_TIMEOUT,
            read_request(&mut stream, &mut buf, MAX_REQUEST_BODY),
        )
        .await
        {
            Err(_) | Ok(Ok(None)) | Ok(Err(ReadError::Io)) => return,
            Ok(Err(ReadError::Malformed(status, message))) => {
                let resp = Response::error(status, message);
                let _ = send(&mut stream, &resp, false, 1, false).await;
                return;
            }
            Ok(Ok(Some(req))) => req,
        };
        if websocket::is_upgrade(&req) {
            websocket::serve(app, stream, &req, std::mem::take(&mut buf)).await;
            return;
        }
        let resp = match super::chat::llm_route(&req.path) {
            Some(uri) => match app.chat(&req, uri).await {
                super::chat::Chat::Done(resp) => resp,
                super::chat::Chat::Stream(s) => {
                    let keep = req.keep_alive;
                    if app.stream_h1(&mut stream, &req, s).await.is_err() || !keep {
                        return;
                    }
                    continue;
                }
            },
            None => app.handle(&req).await,
        };
        let resp = compression::apply(resp, &req.path, req.header("accept-encoding"));
        let keep = req.keep_alive;
        let sent = send(&mut stream, &resp, keep, req.version, req.is_head()).await;
        if let Some(len) = resp.restart {
            // `POST /admin/faults` asked for a restart: it starts once its answer
            // is written, so the caller learns that it was accepted.
            app.request_restart(len);
            return;
        }
        if sent.is_err() || !keep {
            return;
        }
    }
}

/// Writes `resp` with a `Content-Length` body (none for 204, whose head has neither
/// type nor length), keeping the connection or saying it closes.
async fn send<S: AsyncWrite + Unpin>(
    stream: &mut S,
    resp: &Response,
    keep_alive: bool,
    version: u8,
    head_only: bool,
) -> io::Result<()> {
    let mut head = Head::lowercase(resp.status);
    let body: &[u8] = if resp.status == 204 {
        &[]
    } else {
        head.header("content-type", resp.content_type)
            .content_length(resp.body.len() as u64);
        &resp.body
    };
    for (name, value) in &resp.headers {
        head.header(name, value);
    }
    head.connection(connection_value(keep_alive, version));
    write_response(stream, head, body, head_only).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_is_told_by_its_first_bytes() {
        assert_eq!(wire_of(b"PRI * HTTP/2.0\r\n"), Some(Wire::H2));
        assert_eq!(wire_of(b"PRI"), Some(Wire::H2));
        assert_eq!(wire_of(b"GET / HTTP/1.1\r\n"), Some(Wire::Http1));
        assert_eq!(wire_of(b"POST"), Some(Wire::Http1));
        assert_eq!(wire_of(&[0x16, 3, 1]), Some(Wire::Tls));
        assert_eq!(wire_of(b"P"), None, "could still be the preface");
        assert_eq!(wire_of(b"PR"), None);
        assert_eq!(
            wire_of(b"G"),
            Some(Wire::Http1),
            "not the preface: HTTP/1.1 at once"
        );
        assert_eq!(wire_of(b""), None);
    }
}
