//! The agent's side of a new connection on a TLS port: the TLS handshake, bounded
//! by the server's patience like a request's head (a client that connects and says
//! nothing, or stops mid-handshake, is closed), and a plain-HTTP request answered
//! with a word on using `https://` instead of a failed handshake nobody can read.
//! The plain request is never read as a request: its token, if it carries one, has
//! crossed the network in clear text already, and is not looked at.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{timeout_at, Instant};
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

/// The first byte of a TLS record carrying a handshake message (a ClientHello).
const TLS_HANDSHAKE: u8 = 0x16;

/// What a plain-HTTP request to a TLS port is told.
pub const PLAIN_HTTP_REFUSAL: &str = "this agent serves HTTPS only (pado agent --tls): give its URL as https://HOST:PORT, with --agent-fingerprint as the agent printed it (or --agent-ca FILE)";

/// How much of a refused plain request is read and dropped after the answer, so
/// that closing does not reset the connection before the client reads the answer.
const DRAIN_BYTES: usize = 64 * 1024;
/// How long that may take.
const DRAIN_TIME: Duration = Duration::from_secs(1);

/// The TLS stream of `tcp` once its handshake completed within `within`; `None`
/// for a client that said nothing, spoke plain HTTP (answered `400` with
/// [`PLAIN_HTTP_REFUSAL`]) or anything else, or failed the handshake.
pub async fn accept(
    tcp: TcpStream,
    config: Arc<rustls::ServerConfig>,
    within: Duration,
) -> Option<TlsStream<TcpStream>> {
    let deadline = Instant::now() + within;
    let mut first = [0u8; 1];
    match timeout_at(deadline, tcp.peek(&mut first)).await {
        Ok(Ok(1)) => {}
        _ => return None,
    }
    if first[0] != TLS_HANDSHAKE {
        // An HTTP method begins with a capital letter.
        if first[0].is_ascii_uppercase() {
            refuse_plain(tcp).await;
        }
        return None;
    }
    match timeout_at(deadline, TlsAcceptor::from(config).accept(tcp)).await {
        Ok(Ok(s)) => Some(s),
        _ => None,
    }
}

/// Answers a plain-HTTP request `400` and closes its connection.
async fn refuse_plain(mut tcp: TcpStream) {
    let mut head = pado_h1server::Head::new(400);
    head.header("Content-Type", "text/plain; charset=utf-8")
        .content_length(PLAIN_HTTP_REFUSAL.len() as u64)
        .connection(Some("close"));
    let sent = pado_h1server::write_response(&mut tcp, head, PLAIN_HTTP_REFUSAL.as_bytes(), false)
        .await
        .is_ok();
    if !sent || tcp.shutdown().await.is_err() {
        return;
    }
    let until = Instant::now() + DRAIN_TIME;
    let mut sink = [0u8; 4096];
    let mut left = DRAIN_BYTES;
    while left > 0 {
        match timeout_at(until, tcp.read(&mut sink)).await {
            Ok(Ok(n)) if n > 0 => left = left.saturating_sub(n),
            _ => return,
        }
    }
}
