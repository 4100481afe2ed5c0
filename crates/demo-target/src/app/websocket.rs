//! WebSocket endpoints, upgraded from an HTTP/1.1 request on the service's port
//! (`ws://` on plain connections, `wss://` with `--tls`):
//!
//! - `/ws/echo`: every text or binary message back at once; a text message holding
//!   `"type":"join"` is answered `{"type":"joined","id":"m-N"}` instead (N counts
//!   the service's sessions), so a scenario can extract an id from a reply.
//! - `/ws/feed?every_ms=N&count=C`: a live feed of the board: every N ms (default
//!   1000, 10 to 60000) the next post, newest first, as
//!   `{"type":"post","id","title","author"}` (Korean and English titles), C times
//!   (default: until the client closes).
//!
//! Sessions are long-lived and take no worker permit (a real service serves them on
//! its event loop, apart from its request threads).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use super::App;
use crate::http::Request;

/// Sessions opened so far: the `N` of `m-N`.
static SESSIONS: AtomicU64 = AtomicU64::new(0);

/// Whether `req` asks to upgrade to WebSocket on one of the `/ws/` paths.
pub(super) fn is_upgrade(req: &Request) -> bool {
    req.path.starts_with("/ws/")
        && req
            .header("upgrade")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("websocket"))
}

/// Which endpoint a session serves.
enum Endpoint {
    Echo,
    Feed { every: Duration, count: Option<u64> },
}

/// Answers the upgrade (`101`, or a `400`/`404` that closes) and runs the session on
/// `stream`; `leftover` holds bytes the client sent after its request.
pub(super) async fn serve<S>(app: &Arc<App>, mut stream: S, req: &Request, leftover: Vec<u8>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let endpoint = match req.path.as_str() {
        "/ws/echo" => Endpoint::Echo,
        "/ws/feed" => {
            let num = |name: &str| req.query_param(name).and_then(|v| v.parse::<u64>().ok());
            Endpoint::Feed {
                every: Duration::from_millis(num("every_ms").unwrap_or(1000).clamp(10, 60_000)),
                count: num("count"),
            }
        }
        _ => {
            let _ = refuse(
                &mut stream,
                404,
                "no such WebSocket endpoint (/ws/echo, /ws/feed)",
            )
            .await;
            return;
        }
    };
    let Some(key) = req.header("sec-websocket-key") else {
        let _ = refuse(
            &mut stream,
            400,
            "a WebSocket upgrade needs Sec-WebSocket-Key",
        )
        .await;
        return;
    };
    let accept = derive_accept_key(key.trim().as_bytes());
    let head = format!(
        "HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-accept: {accept}\r\n\r\n"
    );
    if stream.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    let ws = WebSocketStream::from_partially_read(stream, leftover, Role::Server, None).await;
    let id = SESSIONS.fetch_add(1, Ordering::Relaxed) + 1;
    match endpoint {
        Endpoint::Echo => echo(ws, id).await,
        Endpoint::Feed { every, count } => feed(app, ws, every, count).await,
    }
}

async fn refuse<S: AsyncWrite + Unpin>(
    stream: &mut S,
    status: u16,
    message: &str,
) -> std::io::Result<()> {
    let body = serde_json::to_vec(&serde_json::json!({ "status": status, "message": message }))
        .unwrap_or_default();
    let head = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        crate::http::reason(status),
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(&body).await
}

async fn echo<S: AsyncRead + AsyncWrite + Unpin>(mut ws: WebSocketStream<S>, id: u64) {
    while let Some(Ok(m)) = ws.next().await {
        let reply = match m {
            Message::Text(t) if t.as_str().contains("\"type\":\"join\"") => {
                Message::text(format!("{{\"type\":\"joined\",\"id\":\"m-{id}\"}}"))
            }
            Message::Text(_) | Message::Binary(_) => m,
            Message::Close(_) => break,
            _ => continue,
        };
        if ws.send(reply).await.is_err() {
            return;
        }
    }
    let _ = ws.close(None).await;
}

async fn feed<S: AsyncRead + AsyncWrite + Unpin>(
    app: &Arc<App>,
    mut ws: WebSocketStream<S>,
    every: Duration,
    count: Option<u64>,
) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    let mut sent = 0u64;
    loop {
        if count.is_some_and(|c| sent >= c) {
            break;
        }
        tokio::select! {
            _ = tick.tick() => {
                let Some(post) = app.nth_newest_post(sent) else { break };
                if ws.send(Message::text(post.to_string())).await.is_err() {
                    return;
                }
                sent += 1;
            }
            m = ws.next() => match m {
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                Some(Ok(_)) => {}
            },
        }
    }
    let _ = ws.close(None).await;
}

impl App {
    /// The `n`-th newest post (cycling through them all) as the feed sends it.
    fn nth_newest_post(&self, n: u64) -> Option<serde_json::Value> {
        let store = pado_base::lock::read(&self.store);
        let len = store.posts.len() as u64;
        if len == 0 {
            return None;
        }
        let p = store.posts.values().rev().nth((n % len) as usize)?;
        Some(serde_json::json!({
            "type": "post",
            "id": p.id,
            "title": p.title,
            "author": p.author,
        }))
    }
}
