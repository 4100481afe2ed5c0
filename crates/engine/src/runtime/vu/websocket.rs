//! A WebSocket session of a `ws:` step: the handshake over pado's own connection
//! (TCP and TLS timed by `pado_http::conn`, the upgrade by tokio-tungstenite), then
//! the actions in order, then a normal close. Every data message read is counted,
//! whichever action is waiting; the session is one [`WsSession`] of its step.

use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use pado_http::conn::{connect, io_error_kind, Stream};
use pado_metrics::{ErrorKind, NewConnection, WsError, WsSession};
use tokio_tungstenite::tungstenite::{self, handshake::client::generate_key, Message};
use tokio_tungstenite::WebSocketStream;

use crate::plan::{CheckPlan, RequestForm, StepPlan, WsActionPlan, WsPlan};
use crate::response_view::ResponseView;
use crate::trace::{CheckOutcome, Trace};

use crate::runtime::worker::WorkerCtx;

use super::described::{check_name, redactor, shown, step_name};
use super::judged::{evaluate, extract};
use super::{us, Vu};

/// Longest wait for the server's answer to our close frame.
const CLOSE_WAIT: Duration = Duration::from_secs(2);
/// Longest wait for a message to be taken by a server that has stopped reading
/// (its socket full): then the send fails as `ws_backlog`.
const SEND_WAIT: Duration = Duration::from_secs(5);
/// Control frames (pings, pongs) read in a row before the VU yields its worker.
const CONTROL_BURST: u32 = 64;
/// Messages a debug transcript shows (then "…").
const TRANSCRIPT_MESSAGES: usize = 40;
/// Bytes of one message a debug transcript shows.
const TRANSCRIPT_BYTES: usize = 200;

/// Bytes of our own frames (answers to the server's pings, our messages) held
/// while the server does not read them; past this a send fails as `ws_backlog`
/// and a pong waits for the next one instead of piling up (tungstenite's default
/// is unbounded, so a server that floods pings and never reads grew pado's memory
/// by the rate it sent).
const MAX_WRITE_BACKLOG: usize = 1 << 20;

/// tungstenite's limits for pado's sessions: a message (and one frame) no longer
/// than a response body pado keeps (`defaults.max_body`, 4 MiB unless set, at
/// least 64 KiB), so a fragmented message that never ends is cut there as
/// `ws_too_large`; the write backlog as [`MAX_WRITE_BACKLOG`].
pub(super) fn limits(max_body: usize) -> tungstenite::protocol::WebSocketConfig {
    let message = max_body.max(64 * 1024);
    tungstenite::protocol::WebSocketConfig::default()
        .write_buffer_size(64 * 1024)
        .max_write_buffer_size(MAX_WRITE_BACKLOG)
        .max_message_size(Some(message))
        .max_frame_size(Some(message))
}

/// What a wait for the next message ended with.
enum Recv {
    /// A data message (text or binary), counted.
    Data(Vec<u8>, Instant),
    /// The deadline passed.
    Deadline,
    /// The run is stopping (only when the wait allows it).
    Stopped,
    /// The session ended or broke.
    Failed(WsError),
}

/// The session's live state.
struct Session {
    ws: WebSocketStream<Stream>,
    sent: u64,
    received: u64,
    /// When the last `send` went out that no `expect` has matched since.
    last_send: Option<Instant>,
    /// Debug transcript (only with an observer).
    transcript: Option<Vec<u8>>,
    shown: usize,
}

impl Session {
    fn note(&mut self, dir: &str, text: &[u8]) {
        let Some(t) = self.transcript.as_mut() else {
            return;
        };
        self.shown += 1;
        if self.shown > TRANSCRIPT_MESSAGES {
            if self.shown == TRANSCRIPT_MESSAGES + 1 {
                t.extend_from_slice("…\n".as_bytes());
            }
            return;
        }
        t.extend_from_slice(dir.as_bytes());
        let cut = text.len().min(TRANSCRIPT_BYTES);
        // Never cut inside a UTF-8 sequence.
        let cut = (0..=cut)
            .rev()
            .find(|&i| std::str::from_utf8(&text[..i]).is_ok())
            .unwrap_or(0);
        t.extend_from_slice(&text[..cut]);
        if cut < text.len() {
            t.extend_from_slice("…".as_bytes());
        }
        t.push(b'\n');
    }

    async fn send(&mut self, text: &[u8]) -> Result<(), WsError> {
        let msg = match std::str::from_utf8(text) {
            Ok(s) => Message::text(s),
            Err(_) => Message::binary(text.to_vec()),
        };
        // Timed from just before the write (as `http_req_duration`): the peer may
        // read the message before this task runs again.
        let at = Instant::now();
        // A server that does not read leaves the write pending: bounded, so the
        // session (and the run's end) never waits on it.
        match tokio::time::timeout(SEND_WAIT, self.ws.send(msg)).await {
            Err(_) => return Err(WsError::Backlog),
            Ok(r) => r.map_err(failure)?,
        }
        self.sent += 1;
        self.last_send = Some(at);
        self.note("→ ", text);
        Ok(())
    }

    /// The next data message before `deadline` (control frames are answered by
    /// tungstenite and skipped). With `stop`, a graceful stop ends the wait.
    async fn recv(&mut self, deadline: Instant, stop: Option<&WorkerCtx>) -> Recv {
        let mut skipped = 0u32;
        loop {
            // A server flooding control frames keeps the stream always ready:
            // the deadline and the run's stop are looked at here too, and the
            // worker's other VUs get their turn now and then.
            if Instant::now() >= deadline {
                return Recv::Deadline;
            }
            if stop.is_some_and(|ctx| ctx.stopping.get()) {
                return Recv::Stopped;
            }
            if skipped > 0 && skipped.is_multiple_of(CONTROL_BURST) {
                tokio::task::yield_now().await;
            }
            let next = async {
                match stop {
                    Some(ctx) if ctx.stopping.get() => None,
                    Some(ctx) => tokio::select! {
                        m = self.ws.next() => Some(m),
                        _ = ctx.stop_notify.notified() => None,
                    },
                    None => Some(self.ws.next().await),
                }
            };
            let got = match tokio::time::timeout_at(deadline.into(), next).await {
                Err(_) => return Recv::Deadline,
                Ok(None) => return Recv::Stopped,
                Ok(Some(m)) => m,
            };
            let at = Instant::now();
            let data = match got {
                None | Some(Ok(Message::Close(_))) => return Recv::Failed(WsError::ClosedEarly),
                Some(Err(e)) => return Recv::Failed(failure(e)),
                Some(Ok(Message::Text(t))) => t.as_bytes().to_vec(),
                Some(Ok(Message::Binary(b))) => b.to_vec(),
                Some(Ok(_)) => {
                    skipped += 1;
                    continue;
                }
            };
            self.received += 1;
            self.note("← ", &data);
            return Recv::Data(data, at);
        }
    }

    /// Close normally: our close frame, then the server's, briefly.
    async fn close(&mut self) {
        if !matches!(
            tokio::time::timeout(CLOSE_WAIT, self.ws.close(None)).await,
            Ok(Ok(()))
        ) {
            return;
        }
        let deadline = Instant::now() + CLOSE_WAIT;
        let mut read = 0u32;
        while let Ok(Some(Ok(m))) = tokio::time::timeout_at(deadline.into(), self.ws.next()).await {
            if m.is_text() || m.is_binary() {
                self.received += 1;
            }
            // As in `recv`: a flood of frames must not hold the close past its wait.
            read += 1;
            if Instant::now() >= deadline {
                break;
            }
            if read.is_multiple_of(CONTROL_BURST) {
                tokio::task::yield_now().await;
            }
        }
    }
}

/// The category of a failure mid-session.
pub(super) fn failure(e: tungstenite::Error) -> WsError {
    use tungstenite::Error as E;
    match e {
        E::ConnectionClosed | E::AlreadyClosed => WsError::ClosedEarly,
        E::Io(io) => match io.kind() {
            std::io::ErrorKind::UnexpectedEof => WsError::ClosedEarly,
            _ => WsError::Connect(io_error_kind(&io, false)),
        },
        E::Protocol(tungstenite::error::ProtocolError::ResetWithoutClosingHandshake) => {
            WsError::ClosedEarly
        }
        E::Capacity(_) => WsError::TooLarge,
        E::WriteBufferFull(_) => WsError::Backlog,
        _ => WsError::Protocol,
    }
}

/// The handshake request tungstenite sends: the step's rendered GET head (path,
/// `Host`, `defaults.headers`, the step's headers, cookies) plus the upgrade headers.
pub(super) fn handshake_request(
    head: &[u8],
    tls: bool,
) -> Option<tungstenite::handshake::client::Request> {
    let mut hs = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut hs);
    req.parse(head).ok()?;
    // tungstenite wants an absolute ws(s) URI; the bytes sent are the path and the
    // `Host` header as built.
    let host = req
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("host"))
        .and_then(|h| std::str::from_utf8(h.value).ok())?;
    let scheme = if tls { "wss" } else { "ws" };
    let mut b = tungstenite::http::Request::builder()
        .method("GET")
        .uri(format!("{scheme}://{host}{}", req.path?));
    // The upgrade's own headers replace any the head has (`Connection: close` of
    // `connections: per-request`).
    for h in req.headers.iter().filter(|h| {
        !h.name.eq_ignore_ascii_case("connection") && !h.name.eq_ignore_ascii_case("upgrade")
    }) {
        b = b.header(h.name, h.value);
    }
    b.header("Connection", "Upgrade")
        .header("Upgrade", "websocket")
        .header("Sec-WebSocket-Version", "13")
        .header("Sec-WebSocket-Key", generate_key())
        .body(())
        .ok()
}

impl Vu {
    /// Run the step's WebSocket session and record it.
    pub(super) async fn websocket(&mut self, scope: &str, step: &StepPlan, ws: &WsPlan) {
        let ctx = self.ctx.clone();
        let t0 = Instant::now();
        let mut result = WsSession::default();
        let mut checks: Vec<CheckOutcome> = Vec::new();
        let mut status = 0u16;
        let mut response_head = Vec::new();
        // The handshake's head: built once, or rendered now.
        let head: Vec<u8> = match &ws.handshake.form {
            RequestForm::Static { bytes, .. } => bytes.to_vec(),
            RequestForm::Dynamic { .. } => match self.render(scope, &ws.handshake) {
                Ok(()) => self.req.clone(),
                Err(_) => Vec::new(),
            },
        };
        let mut session = None;
        if head.is_empty() {
            result.error = Some(WsError::Template);
        } else {
            match self.open(ws, &head, t0, &mut result.opened).await {
                Ok((s, code, rh)) => {
                    result.connected = true;
                    result.connecting_us = us(t0.elapsed());
                    status = code;
                    response_head = rh;
                    let mut s = Session {
                        ws: s,
                        sent: 0,
                        received: 0,
                        last_send: None,
                        transcript: ctx.observer.is_some().then(Vec::new),
                        shown: 0,
                    };
                    result.error = self
                        .actions(scope, step, ws, &mut s, &mut checks)
                        .await
                        .err();
                    if result.error.is_none() {
                        s.close().await;
                    }
                    session = Some(s);
                }
                Err((e, code)) => {
                    status = code;
                    result.error = Some(e);
                }
            }
        }
        let end = Instant::now();
        result.duration_us = us(end - t0);
        if let Some(s) = &session {
            result.msgs_sent = s.sent;
            result.msgs_received = s.received;
        }
        self.finish_session(&ctx, step, &result, end, || {
            self.ws_trace(
                scope,
                step,
                ws,
                &head,
                (status, &response_head),
                &result,
                session.as_ref().and_then(|s| s.transcript.as_deref()),
                checks,
            )
        });
    }

    /// Connect and upgrade within the step's timeout: the stream, the status (101)
    /// and the response head; or why not, with the status a refusal came with.
    async fn open(
        &mut self,
        ws: &WsPlan,
        head: &[u8],
        t0: Instant,
        opened: &mut NewConnection,
    ) -> Result<(WebSocketStream<Stream>, u16, Vec<u8>), (WsError, u16)> {
        let ctx = self.ctx.clone();
        let origin = &ctx.plan.origins[ws.handshake.origin];
        let (conn, _) = connect(origin, ws.timeout)
            .await
            .map_err(|e| (WsError::Connect(e.kind), 0))?;
        *opened = NewConnection::opened(origin.tls.is_some());
        let request =
            handshake_request(head, origin.tls.is_some()).ok_or((WsError::Protocol, 0))?;
        let left = ws.timeout.saturating_sub(t0.elapsed());
        let hs = tokio_tungstenite::client_async_with_config(
            request,
            conn.stream,
            Some(limits(ctx.plan.max_body)),
        );
        match tokio::time::timeout(left, hs).await {
            Err(_) => Err((WsError::Connect(ErrorKind::Timeout), 0)),
            Ok(Ok((stream, resp))) => {
                let mut rh = format!("HTTP/1.1 {}\r\n", resp.status().as_u16()).into_bytes();
                for (k, v) in resp.headers() {
                    rh.extend_from_slice(k.as_str().as_bytes());
                    rh.extend_from_slice(b": ");
                    rh.extend_from_slice(v.as_bytes());
                    rh.extend_from_slice(b"\r\n");
                }
                Ok((stream, resp.status().as_u16(), rh))
            }
            Ok(Err(tungstenite::Error::Http(resp))) => {
                let code = resp.status().as_u16();
                Err((WsError::HandshakeRefused(code), code))
            }
            Ok(Err(e)) => Err((
                match failure(e) {
                    // Closed before the answer: the connection was reset.
                    WsError::ClosedEarly => WsError::Connect(ErrorKind::Reset),
                    other => other,
                },
                0,
            )),
        }
    }

    /// The actions in order; the first failure ends the session.
    async fn actions(
        &mut self,
        scope: &str,
        step: &StepPlan,
        ws: &WsPlan,
        s: &mut Session,
        checks: &mut Vec<CheckOutcome>,
    ) -> Result<(), WsError> {
        let ctx = self.ctx.clone();
        let mut msg = Vec::new();
        for a in &ws.actions {
            match a {
                WsActionPlan::Send { text, every, count } => {
                    for k in 0..*count {
                        if k > 0 {
                            let until = Instant::now() + *every;
                            loop {
                                match s.recv(until, Some(&ctx)).await {
                                    Recv::Data(..) => {}
                                    Recv::Deadline => break,
                                    Recv::Stopped => return Ok(()),
                                    Recv::Failed(e) => return Err(e),
                                }
                            }
                        }
                        msg.clear();
                        let plan = &ctx.plan;
                        let mut rc = render_ctx!(self, plan, scope);
                        rc.render(text, &mut msg).map_err(|_| WsError::Template)?;
                        s.send(&msg).await?;
                    }
                }
                WsActionPlan::Hold(d) => {
                    let until = Instant::now() + *d;
                    loop {
                        match s.recv(until, Some(&ctx)).await {
                            Recv::Data(..) => {}
                            Recv::Deadline | Recv::Stopped => break,
                            Recv::Failed(e) => return Err(e),
                        }
                    }
                }
                WsActionPlan::Close => return Ok(()),
                WsActionPlan::Expect {
                    check,
                    conditions,
                    extract: ex,
                    timeout,
                } => {
                    // Templated conditions rendered once for this wait.
                    let resolved = self.resolve(scope, conditions);
                    let until = Instant::now() + *timeout;
                    loop {
                        match s.recv(until, None).await {
                            Recv::Data(data, at) => {
                                let view = ResponseView::new(0, &[], &data);
                                let ok = resolved
                                    .iter()
                                    .all(|c| evaluate(c, &view, true, Duration::ZERO).1);
                                if !ok {
                                    continue;
                                }
                                ctx.check(*check, true);
                                if let Some(sent) = s.last_send.take() {
                                    ctx.record_ws_latency(step.series, us(at - sent), at);
                                }
                                for e in ex {
                                    self.vars[e.var] = extract(&e.source, &view, &self.jar, 0);
                                }
                                if ctx.observer.is_some() {
                                    checks.push(self.outcome(*check, true, "matched"));
                                }
                                break;
                            }
                            Recv::Deadline | Recv::Stopped => {
                                ctx.check(*check, false);
                                for e in ex {
                                    self.vars[e.var] = None;
                                }
                                if ctx.observer.is_some() {
                                    let why = format!("no matching message in {timeout:?}");
                                    checks.push(self.outcome(*check, false, &why));
                                }
                                return Err(WsError::ExpectTimeout);
                            }
                            Recv::Failed(e) => {
                                ctx.check(*check, false);
                                return Err(e);
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// An expect's conditions with templated values rendered with this VU's
    /// variables.
    fn resolve(&mut self, scope: &str, conditions: &[CheckPlan]) -> Vec<CheckPlan> {
        let ctx = self.ctx.clone();
        let plan = &ctx.plan;
        let mut rc = render_ctx!(self, plan, scope);
        conditions
            .iter()
            .map(|c| match c {
                CheckPlan::Templated { id, value, kind } => {
                    let mut out = Vec::new();
                    // Check values have no shaped holes: this cannot fail.
                    let _ = rc.render(value, &mut out);
                    CheckPlan::with_value(*id, kind, &out)
                }
                CheckPlan::BodyContains { id, needle } => CheckPlan::BodyContains {
                    id: *id,
                    needle: needle.clone(),
                },
                CheckPlan::BodyMatches { id, re } => CheckPlan::BodyMatches {
                    id: *id,
                    re: re.clone(),
                },
                CheckPlan::JsonEquals { id, path, expected } => CheckPlan::JsonEquals {
                    id: *id,
                    path: path.clone(),
                    expected: expected.clone(),
                },
                CheckPlan::JsonExists { id, path } => CheckPlan::JsonExists {
                    id: *id,
                    path: path.clone(),
                },
                // Not made for messages (see the plan).
                _ => CheckPlan::BodyMatches {
                    id: u32::MAX,
                    re: regex::bytes::Regex::new("$^").expect("a valid regex"),
                },
            })
            .collect()
    }

    fn outcome(&self, check: u32, ok: bool, actual: &str) -> CheckOutcome {
        CheckOutcome {
            name: check_name(&self.ctx.plan, check),
            ok,
            actual: actual.to_string(),
        }
    }

    /// The session as a debug trace: the handshake as the request and response,
    /// the messages (first bytes of each, redacted) as the response body.
    #[allow(clippy::too_many_arguments)]
    fn ws_trace(
        &self,
        scope: &str,
        step: &StepPlan,
        ws: &WsPlan,
        head: &[u8],
        (status, response_head): (u16, &[u8]),
        result: &WsSession,
        transcript: Option<&[u8]>,
        checks: Vec<CheckOutcome>,
    ) -> Trace {
        let ctx = &self.ctx;
        let plan = &ctx.plan;
        let full = ctx.observer.as_ref().is_some_and(|o| o.full());
        let r = redactor(plan, head, full);
        let origin = &plan.origins[ws.handshake.origin].label;
        let ws_origin = origin
            .strip_prefix("https://")
            .map(|o| format!("wss://{o}"))
            .or_else(|| origin.strip_prefix("http://").map(|o| format!("ws://{o}")))
            .unwrap_or_else(|| origin.clone());
        let (_, target) = crate::redact::request_line(head);
        let expected = ws.actions.iter().filter_map(|a| match a {
            WsActionPlan::Expect { extract, .. } => Some(extract),
            _ => None,
        });
        let extracted = self.extracted(plan, expected.flatten().map(|e| e.var), &r);
        let mut messages = format!(
            "{} sent, {} received\n",
            result.msgs_sent, result.msgs_received
        )
        .into_bytes();
        messages.extend_from_slice(transcript.unwrap_or_default());
        Trace {
            scope: scope.to_string(),
            step: step_name(ctx, step.series),
            vu: self.id,
            method: "WS".into(),
            url: r.text(format!("{ws_origin}{}", String::from_utf8_lossy(target)).as_bytes()),
            request_headers: crate::redact::headers(head, &r, full),
            request_body: None,
            status,
            error: match result.error {
                Some(WsError::Connect(k)) => Some(k),
                _ => None,
            },
            reason: result.error.map(WsError::name),
            failed: result.error.is_some(),
            response_headers: crate::redact::headers(response_head, &r, full),
            response_body: shown(&r, &messages),
            phases: pado_metrics::Phases {
                connecting_us: result.connecting_us,
                duration_us: result.duration_us,
                ..Default::default()
            },
            checks,
            extracted,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_handshake_says_upgrade_whatever_the_head_said() {
        let head = b"GET /ws/echo?room=1 HTTP/1.1\r\nHost: 127.0.0.1:9\r\nConnection: close\r\nX-Room: \xec\xb1\x84\r\n\r\n";
        let req = handshake_request(head, false).unwrap();
        assert_eq!(req.uri().to_string(), "ws://127.0.0.1:9/ws/echo?room=1");
        let conn: Vec<_> = req.headers().get_all("connection").iter().collect();
        assert_eq!(conn, ["Upgrade"]);
        assert_eq!(req.headers()["upgrade"], "websocket");
        assert_eq!(req.headers()["x-room"].as_bytes(), "채".as_bytes());
    }
}
