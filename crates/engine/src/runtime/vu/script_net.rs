//! A script's WebSocket sessions and gRPC calls (k6's `k6/ws`, `k6/websockets`,
//! `k6/net/grpc`) on pado's own clients: the handshake over pado's connection
//! (as a `ws:` step's, [`super::websocket`]), gRPC on an HTTP/2 pool of the VU's
//! own ([`pado_http::grpc`]). Each session is recorded as one of pado's WebSocket
//! sessions (`ws_sessions`, `ws_msgs_sent`, `ws_msgs_received`,
//! `ws_session_duration`, `ws_connecting`) under the series its URL (or `name`
//! tag) gives. gRPC calls and streams are in [`super::script_grpc`].

use std::future::poll_fn;
use std::rc::Rc;
use std::task::Poll;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use pado_http::conn::{connect, Stream};
use pado_http::{H2Pool, Origin, Protocol};
use pado_metrics::{ErrorKind, NewConnection, WsError, WsSession};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use crate::runtime::worker::WorkerCtx;
use crate::script::{ScriptWsCall, ScriptWsEventKind, ScriptWsOpen, ScriptWsReply};

use super::script_debug::script_ws_trace;
use super::websocket::{failure, handshake_request, limits};
use super::{us, Vu};

/// The handshake's deadline (k6's default connect timeout is the request's: 60 s).
const OPEN_TIMEOUT: Duration = Duration::from_secs(60);
/// Longest wait for a frame to be written.
const SEND_WAIT: Duration = Duration::from_secs(5);
/// Pings awaiting their pong, per socket (older ones are forgotten: a server
/// that never answers cannot grow the list).
const PINGS_KEPT: usize = 64;

/// A refused handshake's response: headers, and the body bytes that came with
/// its head.
type Refusal = (Vec<(String, String)>, Vec<u8>);

/// One open session.
struct Socket {
    ws: WebSocketStream<Stream>,
    series: u32,
    t0: Instant,
    result: WsSession,
    /// Our close frame went out: the session ends when the server's comes.
    closing: bool,
    /// The script's pings not yet answered.
    pings: Pings,
    /// What `--http-debug` shows of the session when it ends (only with an
    /// observer).
    debug: Option<Box<WsDebug>>,
}

/// A session's handshake as `--http-debug` shows it.
struct WsDebug {
    scope: String,
    name: String,
    url: String,
    head: Vec<u8>,
    status: u16,
    response: Vec<(String, String)>,
}

/// A socket's pings awaiting their pongs (k6's `ws_ping`): each ping's payload
/// is its number, as k6's, and the pong that echoes it is matched to it.
#[derive(Default)]
struct Pings {
    /// Number and send time of each ping not yet answered, oldest first.
    waiting: Vec<(u64, Instant)>,
    /// The next ping's number.
    next: u64,
}

impl Pings {
    /// The next ping's payload (its number).
    fn payload(&self) -> Bytes {
        Bytes::from(self.next.to_string())
    }

    /// That ping went out at `at`.
    fn sent(&mut self, at: Instant) {
        if self.waiting.len() >= PINGS_KEPT {
            self.waiting.remove(0);
        }
        self.waiting.push((self.next, at));
        self.next += 1;
    }

    /// A pong with `payload` came at `at`: the µs since the ping it answers,
    /// or 0 when it answers none of ours (a server's unsolicited pong, as k6
    /// ignores it).
    fn pong(&mut self, payload: &[u8], at: Instant) -> u64 {
        let n = std::str::from_utf8(payload)
            .ok()
            .and_then(|p| p.parse::<u64>().ok());
        match n.and_then(|n| self.waiting.iter().position(|(k, _)| *k == n)) {
            Some(i) => us(at.saturating_duration_since(self.waiting.remove(i).1)).max(1),
            None => 0,
        }
    }
}

/// A VU's WebSocket sessions (for one iteration) and gRPC connections (kept
/// across iterations).
#[derive(Default)]
pub(super) struct ScriptNet {
    sockets: Vec<Option<Socket>>,
    pub(super) grpc: Vec<(String, Rc<Origin>, Rc<H2Pool>)>,
    /// The gRPC streams open (`grpc.Stream`), by id.
    pub(super) streams: Vec<Option<super::script_grpc::OpenStream>>,
}

impl ScriptNet {
    /// Whether any session is open.
    fn any_open(&self) -> bool {
        self.sockets.iter().any(Option::is_some)
    }
}

/// `ws://h/p` as `http://h/p` (the origin pado connects to).
fn http_url(url: &url::Url) -> Option<url::Url> {
    let scheme = match url.scheme() {
        "ws" | "http" => "http",
        "wss" | "https" => "https",
        _ => return None,
    };
    let mut u = url.clone();
    u.set_scheme(scheme).ok()?;
    Some(u)
}

/// The origin of `url`: resolved off the worker thread when it names a host.
pub(super) async fn origin_of(
    ctx: &WorkerCtx,
    url: &url::Url,
    protocol: Protocol,
) -> Result<Origin, String> {
    let tls = ctx.plan.tls.clone();
    let u = url.clone();
    let make = move || {
        let t2 = tls.clone();
        Origin::for_url_with(
            &u,
            protocol,
            || tls.client_config(),
            || t2.client_config_alpn(&[b"h2"]),
        )
    };
    if matches!(url.host(), Some(url::Host::Domain(_))) {
        tokio::task::spawn_blocking(make)
            .await
            .map_err(|e| e.to_string())?
    } else {
        make()
    }
}

impl Vu {
    /// Do a script's WebSocket request.
    pub(super) async fn script_ws(&mut self, scope: &str, call: ScriptWsCall) -> ScriptWsReply {
        match call {
            ScriptWsCall::Open(o) => self.ws_open(scope, &o).await,
            ScriptWsCall::Send { id, data, binary } => {
                let msg = if binary {
                    Message::binary(data)
                } else {
                    match String::from_utf8(data) {
                        Ok(s) => Message::text(s),
                        Err(_) => return failed("a text message must be UTF-8"),
                    }
                };
                self.ws_write(id, msg, true).await
            }
            ScriptWsCall::Ping { id } => {
                let Some(Some(s)) = self.net.sockets.get_mut(id as usize) else {
                    return failed("the socket is closed");
                };
                let payload = s.pings.payload();
                let at = Instant::now();
                let r = self.ws_write(id, Message::Ping(payload), false).await;
                if r == ScriptWsReply::Done {
                    if let Some(Some(s)) = self.net.sockets.get_mut(id as usize) {
                        s.pings.sent(at);
                    }
                }
                r
            }
            ScriptWsCall::Close { id, code } => {
                let frame = CloseFrame {
                    code: CloseCode::from(code),
                    reason: "".into(),
                };
                // As k6: our close frame, and the session ends now (the server's
                // answer is not awaited).
                let r = self.ws_write(id, Message::Close(Some(frame)), false).await;
                if let Some(Some(s)) = self.net.sockets.get_mut(id as usize) {
                    s.closing = true;
                }
                self.ws_end(id as usize);
                r
            }
            ScriptWsCall::Wait { timeout } => self.ws_wait(timeout).await,
        }
    }

    /// Connect and upgrade; the session is recorded when it ends (or now, when it
    /// could not open).
    async fn ws_open(&mut self, scope: &str, o: &ScriptWsOpen) -> ScriptWsReply {
        let ctx = self.ctx.clone();
        let name = o.name.as_deref().unwrap_or(&o.url);
        let series = ctx.script_series(name, o.group.as_deref(), &[]);
        let t0 = Instant::now();
        let mut result = WsSession::default();
        let mut head = Vec::new();
        let opened = self.ws_handshake(&ctx, o, t0, &mut result, &mut head).await;
        let (ws, status, headers) = match opened {
            Ok(v) => v,
            Err((e, status, why, refusal)) => {
                result.error = Some(e);
                result.duration_us = us(t0.elapsed());
                ctx.record_ws(series, &result, Instant::now());
                if ctx.observer.is_some() {
                    let response = refusal.as_ref().map(|r| r.0.as_slice()).unwrap_or_default();
                    script_ws_trace(
                        &ctx,
                        (self.id, scope, name),
                        (&o.url, &head),
                        (status, response),
                        &result,
                    );
                }
                return match refusal {
                    Some((headers, body)) => ScriptWsReply::Refused {
                        status,
                        headers,
                        body,
                    },
                    None => ScriptWsReply::Failed { status, error: why },
                };
            }
        };
        result.connected = true;
        result.connecting_us = us(t0.elapsed());
        let debug = ctx.observer.is_some().then(|| {
            Box::new(WsDebug {
                scope: scope.to_string(),
                name: name.to_string(),
                url: o.url.clone(),
                head,
                status,
                response: headers.clone(),
            })
        });
        let socket = Socket {
            ws,
            series,
            t0,
            result,
            closing: false,
            pings: Pings::default(),
            debug,
        };
        let id = match self.net.sockets.iter().position(Option::is_none) {
            Some(i) => {
                self.net.sockets[i] = Some(socket);
                i
            }
            None => {
                self.net.sockets.push(Some(socket));
                self.net.sockets.len() - 1
            }
        };
        ScriptWsReply::Opened {
            id: id as u32,
            status,
            headers,
        }
    }

    /// The handshake: the stream, status and headers; or the failure, the status
    /// a refusal came with, why in words, and a refusal's response.
    async fn ws_handshake(
        &mut self,
        ctx: &WorkerCtx,
        o: &ScriptWsOpen,
        t0: Instant,
        result: &mut WsSession,
        shown_head: &mut Vec<u8>,
    ) -> Result<
        (WebSocketStream<Stream>, u16, Vec<(String, String)>),
        (WsError, u16, String, Option<Refusal>),
    > {
        let bad = |why: String| (WsError::Protocol, 0, why, None);
        let url = url::Url::parse(&o.url)
            .ok()
            .filter(|u| matches!(u.scheme(), "ws" | "wss") && u.host().is_some())
            .ok_or_else(|| bad(format!("`{}` is not a ws:// or wss:// URL", o.url)))?;
        let http =
            http_url(&url).ok_or_else(|| bad(format!("`{}`: not a WebSocket URL", o.url)))?;
        let origin = origin_of(ctx, &http, Protocol::Http1).await.map_err(bad)?;
        let (conn, _) = connect(&origin, OPEN_TIMEOUT).await.map_err(|e| {
            (
                WsError::Connect(e.kind),
                0,
                format!("{}: {}", o.url, e.kind.as_str()),
                None,
            )
        })?;
        result.opened = NewConnection::opened(origin.tls.is_some());
        let mut head = format!("GET {}", url.path()).into_bytes();
        if let Some(q) = url.query() {
            head.push(b'?');
            head.extend_from_slice(q.as_bytes());
        }
        head.extend_from_slice(b" HTTP/1.1\r\nHost: ");
        head.extend_from_slice(url.host_str().unwrap_or_default().as_bytes());
        if let Some(p) = url.port() {
            head.extend_from_slice(format!(":{p}").as_bytes());
        }
        head.extend_from_slice(b"\r\n");
        for (k, v) in &o.headers {
            if k.contains(['\r', '\n', ':']) || v.contains(['\r', '\n']) || k.is_empty() {
                continue;
            }
            head.extend_from_slice(format!("{k}: {v}\r\n").as_bytes());
        }
        head.extend_from_slice(b"\r\n");
        if ctx.observer.is_some() {
            shown_head.clone_from(&head);
        }
        let request = handshake_request(&head, origin.tls.is_some())
            .ok_or_else(|| bad(format!("`{}`: a handshake pado cannot build", o.url)))?;
        let hs = tokio_tungstenite::client_async_with_config(
            request,
            conn.stream,
            Some(limits(ctx.plan.max_body)),
        );
        let left = OPEN_TIMEOUT.saturating_sub(t0.elapsed());
        match tokio::time::timeout(left, hs).await {
            Err(_) => Err((
                WsError::Connect(ErrorKind::Timeout),
                0,
                format!("{}: the handshake timed out", o.url),
                None,
            )),
            Ok(Ok((stream, resp))) => {
                let headers = headers_of(resp.headers());
                Ok((stream, resp.status().as_u16(), headers))
            }
            Ok(Err(tokio_tungstenite::tungstenite::Error::Http(resp))) => {
                let code = resp.status().as_u16();
                let refusal = (
                    headers_of(resp.headers()),
                    resp.body().clone().unwrap_or_default(),
                );
                Err((
                    WsError::HandshakeRefused(code),
                    code,
                    format!("{}: the server answered the handshake with {code}", o.url),
                    Some(refusal),
                ))
            }
            Ok(Err(e)) => {
                let why = e.to_string();
                Err((failure(e), 0, format!("{}: {why}", o.url), None))
            }
        }
    }

    /// Write a frame on socket `id` (`count`: a data message, counted).
    async fn ws_write(&mut self, id: u32, msg: Message, count: bool) -> ScriptWsReply {
        let Some(Some(s)) = self.net.sockets.get_mut(id as usize) else {
            return failed("the socket is closed");
        };
        if s.closing {
            return failed("the socket is closing");
        }
        match tokio::time::timeout(SEND_WAIT, s.ws.send(msg)).await {
            Ok(Ok(())) => {
                if count {
                    s.result.msgs_sent += 1;
                }
                ScriptWsReply::Done
            }
            Ok(Err(e)) => {
                let why = e.to_string();
                s.result.error.get_or_insert(failure(e));
                failed(&why)
            }
            Err(_) => {
                s.result.error.get_or_insert(WsError::Backlog);
                failed("the server does not read what is sent")
            }
        }
    }

    /// The next event of any open session, at most `timeout`.
    async fn ws_wait(&mut self, timeout: Option<Duration>) -> ScriptWsReply {
        let ctx = self.ctx.clone();
        if !self.net.any_open() {
            return ScriptWsReply::Idle;
        }
        let sockets = &mut self.net.sockets;
        let next = poll_fn(|cx| {
            for (i, s) in sockets.iter_mut().enumerate() {
                if let Some(s) = s {
                    if let Poll::Ready(m) = s.ws.poll_next_unpin(cx) {
                        return Poll::Ready((i, m));
                    }
                }
            }
            Poll::Pending
        });
        let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
        let got = tokio::select! {
            r = next => Some(r),
            _ = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            } => None,
            _ = ctx.stop_notify.notified(), if !ctx.stopping.get() => None,
        };
        let Some((i, m)) = got else {
            return ScriptWsReply::Timeout;
        };
        let id = i as u32;
        let event = |kind, data: Vec<u8>, code| ScriptWsReply::Event {
            id,
            kind,
            data,
            code,
            ping_us: 0,
        };
        let Some(s) = self.net.sockets[i].as_mut() else {
            return ScriptWsReply::Timeout;
        };
        match m {
            Some(Ok(Message::Text(t))) => {
                s.result.msgs_received += 1;
                event(ScriptWsEventKind::Text, t.as_bytes().to_vec(), 0)
            }
            Some(Ok(Message::Binary(b))) => {
                s.result.msgs_received += 1;
                event(ScriptWsEventKind::Binary, b.to_vec(), 0)
            }
            Some(Ok(Message::Ping(_))) => event(ScriptWsEventKind::Ping, Vec::new(), 0),
            Some(Ok(Message::Pong(payload))) => ScriptWsReply::Event {
                id,
                kind: ScriptWsEventKind::Pong,
                data: Vec::new(),
                code: 0,
                ping_us: s.pings.pong(&payload, Instant::now()),
            },
            Some(Ok(Message::Frame(_))) => event(ScriptWsEventKind::Pong, Vec::new(), 0),
            Some(Ok(Message::Close(frame))) => {
                let (code, reason) = frame
                    .map(|f| (u16::from(f.code), f.reason.as_bytes().to_vec()))
                    .unwrap_or((1005, Vec::new()));
                // Our answer to the server's close (tungstenite queues it).
                let _ = tokio::time::timeout(SEND_WAIT, s.ws.flush()).await;
                self.ws_end(i);
                event(ScriptWsEventKind::Close, reason, code)
            }
            None => {
                let clean = s.closing;
                if !clean {
                    s.result.error.get_or_insert(WsError::ClosedEarly);
                }
                self.ws_end(i);
                event(ScriptWsEventKind::Close, Vec::new(), 1006)
            }
            Some(Err(e)) => {
                let closing = s.closing;
                let why = e.to_string();
                let err = failure(e);
                if closing && err == WsError::ClosedEarly {
                    self.ws_end(i);
                    return event(ScriptWsEventKind::Close, Vec::new(), 1006);
                }
                s.result.error.get_or_insert(err);
                self.ws_end(i);
                event(ScriptWsEventKind::Error, why.into_bytes(), 1006)
            }
        }
    }

    /// Socket `i` ended: recorded and gone.
    fn ws_end(&mut self, i: usize) {
        if let Some(s) = self.net.sockets.get_mut(i).and_then(Option::take) {
            let mut result = s.result;
            let end = Instant::now();
            result.duration_us = us(end - s.t0);
            self.ctx.record_ws(s.series, &result, end);
            if let Some(d) = s.debug {
                script_ws_trace(
                    &self.ctx,
                    (self.id, &d.scope, &d.name),
                    (&d.url, &d.head),
                    (d.status, &d.response),
                    &result,
                );
            }
        }
    }

    /// The run cut the iteration (its deadline passed mid-session): each session
    /// still open ends here, recorded with what it sent and read (its connection
    /// dropped, as every connection an interrupted iteration leaves).
    pub(super) fn script_ws_cut(&mut self) {
        self.script_grpc_cut();
        for i in 0..self.net.sockets.len() {
            self.ws_end(i);
        }
        self.net.sockets.clear();
    }

    /// The iteration ended (or one cut short left sessions behind): sessions
    /// still open are closed and recorded.
    pub(super) async fn script_ws_end_iteration(&mut self) {
        if !self.net.streams.is_empty() {
            self.script_grpc_cut();
        }
        if self.net.sockets.is_empty() {
            return;
        }
        for i in 0..self.net.sockets.len() {
            let Some(s) = self.net.sockets[i].as_mut() else {
                continue;
            };
            if !s.closing {
                let _ = tokio::time::timeout(SEND_WAIT, s.ws.close(None)).await;
            }
            self.ws_end(i);
        }
        self.net.sockets.clear();
    }
}

/// A response's headers as (name, value) text.
fn headers_of(h: &http::HeaderMap) -> Vec<(String, String)> {
    h.iter()
        .map(|(k, v)| {
            (
                k.as_str().to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect()
}

fn failed(why: &str) -> ScriptWsReply {
    ScriptWsReply::Failed {
        status: 0,
        error: why.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ws_url_connects_to_its_http_origin() {
        let u = url::Url::parse("wss://127.0.0.1:9443/chat?room=파도").unwrap();
        let h = http_url(&u).unwrap();
        assert_eq!(h.scheme(), "https");
        assert_eq!(h.port(), Some(9443));
        assert!(http_url(&url::Url::parse("ftp://x/").unwrap()).is_none());
    }

    #[test]
    fn a_pong_is_timed_from_the_ping_it_echoes_and_a_stranger_is_not() {
        let t0 = Instant::now();
        let mut p = Pings::default();
        assert_eq!(&p.payload()[..], b"0");
        p.sent(t0);
        assert_eq!(&p.payload()[..], b"1");
        p.sent(t0 + Duration::from_millis(5));
        // The second ping's pong first: timed from the second ping.
        assert_eq!(p.pong(b"1", t0 + Duration::from_millis(12)), 7_000);
        assert_eq!(p.pong(b"0", t0 + Duration::from_millis(20)), 20_000);
        // Answered once; a pong nobody asked for (empty, or not ours) is 0.
        assert_eq!(p.pong(b"0", t0 + Duration::from_millis(30)), 0);
        assert_eq!(p.pong(b"", t0), 0);
        assert_eq!(p.pong(b"77", t0), 0);
        // A server that never answers keeps at most PINGS_KEPT waiting.
        for _ in 0..(PINGS_KEPT + 10) {
            p.sent(t0);
        }
        assert_eq!(p.waiting.len(), PINGS_KEPT);
    }
}
