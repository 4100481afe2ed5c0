//! One connection: read requests, count them, answer them as the route says.

use std::io;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::http::{self, read_request, ReadError, Request};
use crate::Shared;

mod multipart;
mod sse;

/// Longest delay any route will honour (`/delay`, `/slow-body`, `/stall`):
/// larger values are clamped, so a silly number cannot overflow a deadline.
const MAX_WAIT: Duration = Duration::from_secs(24 * 60 * 60);
/// Size of each write for `/bytes/{n}`.
const PIECE: usize = 64 * 1024;
/// Largest chunk `/chunked` will make (`size=`), to bound memory.
const MAX_CHUNK: u64 = 16 * 1024 * 1024;
/// How long a closing connection waits for the client to close its side.
const LINGER: Duration = Duration::from_secs(2);

/// A byte stream the server speaks HTTP over, with access to the TCP socket
/// underneath (for `/reset`, which needs `SO_LINGER`).
pub(crate) trait Transport: AsyncRead + AsyncWrite + Unpin + Send {
    fn tcp(&self) -> &TcpStream;
}

impl Transport for TcpStream {
    fn tcp(&self) -> &TcpStream {
        self
    }
}

impl Transport for tokio_rustls::server::TlsStream<TcpStream> {
    fn tcp(&self) -> &TcpStream {
        self.get_ref().0
    }
}

/// What to do with the connection once a response has been written.
enum After {
    /// Read the next request.
    KeepAlive,
    /// Close politely (FIN after the response).
    Close,
    /// Reset (RST) without a response.
    Reset,
    /// The client is gone; just drop the socket.
    Gone,
}

/// Serves one connection until it closes.
pub(crate) async fn serve<S: Transport>(mut s: S, conn_id: u64, shared: Arc<Shared>) {
    let mut buf = Vec::with_capacity(16 * 1024);
    loop {
        if reject_early(&mut s, &mut buf, conn_id, &shared).await {
            return;
        }
        let req = match read_request(&mut s, &mut buf, http::MAX_BODY).await {
            Ok(Some(req)) => req,
            Ok(None) | Err(ReadError::Io) => return,
            Err(ReadError::Malformed(code, why)) => {
                let body = format!("{why}\n");
                let mut out = head(
                    code,
                    Some("text/plain"),
                    Some(body.len() as u64),
                    &[],
                    Some("close"),
                )
                .finish();
                out.extend_from_slice(body.as_bytes());
                if s.write_all(&out).await.is_ok() {
                    close_gracefully(s).await;
                }
                return;
            }
        };
        let received_at = Instant::now();
        shared.count(&req, conn_id, received_at);
        match respond(&mut s, &req, received_at, &shared).await {
            Ok(After::KeepAlive) => {}
            Ok(After::Close) => {
                close_gracefully(s).await;
                return;
            }
            Ok(After::Reset) => {
                // SO_LINGER 0: close() sends RST instead of FIN.
                let _ = s.tcp().set_zero_linger();
                drop(s);
                return;
            }
            Ok(After::Gone) | Err(_) => return,
        }
    }
}

/// `/reject-early`: like a server refusing an upload that is too large, answers
/// `413` with `Connection: close` as soon as the request *head* is in, without reading
/// the body, then closes: FIN after the response, and (after [`REJECT_LINGER`], with
/// the body still unread) a reset, so a client still writing the body gets an error on
/// its write after the 413 has reached it. Returns `true` when it handled the
/// connection; otherwise the bytes read stay in `buf` for [`read_request`] (which also
/// deals with EOF and malformed heads).
async fn reject_early<S: Transport>(
    s: &mut S,
    buf: &mut Vec<u8>,
    conn_id: u64,
    shared: &Shared,
) -> bool {
    let req = loop {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut parsed = httparse::Request::new(&mut headers);
        match parsed.parse(buf) {
            Ok(httparse::Status::Complete(n)) => {
                let target = parsed.path.unwrap_or("/");
                if target.split('?').next() != Some("/reject-early") {
                    return false;
                }
                let (path, query) = http::split_target(target);
                break Request {
                    method: parsed.method.unwrap_or("GET").to_string(),
                    target: target.to_string(),
                    version: parsed.version.unwrap_or(1),
                    headers: parsed
                        .headers
                        .iter()
                        .map(|h| {
                            let value = String::from_utf8_lossy(h.value).into_owned();
                            (h.name.to_string(), value)
                        })
                        .collect(),
                    body: Vec::new(),
                    path,
                    query,
                    keep_alive: false,
                    // Only the head was read.
                    wire_len: n as u64,
                };
            }
            Ok(httparse::Status::Partial) if buf.len() < 64 * 1024 => {}
            _ => return false,
        }
        buf.reserve(16 * 1024);
        match s.read_buf(buf).await {
            Ok(n) if n > 0 => {}
            _ => return false,
        }
    };
    shared.count(&req, conn_id, Instant::now());
    let body = b"request body too large\n";
    let mut out = head(
        413,
        Some("text/plain"),
        Some(body.len() as u64),
        &[],
        Some("close"),
    )
    .finish();
    out.extend_from_slice(body);
    if s.write_all(&out).await.is_ok() && s.flush().await.is_ok() {
        let _ = s.shutdown().await;
        tokio::time::sleep(REJECT_LINGER).await;
    }
    // Unread body bytes: closing now sends RST.
    let _ = s.tcp().set_zero_linger();
    true
}

/// How long `/reject-early` keeps the socket after its response before resetting it.
const REJECT_LINGER: Duration = Duration::from_millis(200);

/// Sends FIN (and TLS close_notify), then reads and discards whatever the
/// client still sends until it closes, for at most [`LINGER`]: closing a
/// socket with unread data makes the kernel send RST, which could destroy the
/// response before the client has read it.
async fn close_gracefully<S: Transport>(mut s: S) {
    let _ = s.flush().await;
    let _ = s.shutdown().await;
    let mut scratch = vec![0u8; 8192];
    let drain = async {
        loop {
            match s.read(&mut scratch).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    };
    let _ = tokio::time::timeout(LINGER, drain).await;
}

/// Routes one request and writes its response.
async fn respond<S: Transport>(
    s: &mut S,
    req: &Request,
    received_at: Instant,
    shared: &Shared,
) -> io::Result<After> {
    let path = req.path.as_str();
    if let Some(ms) = path.strip_prefix("/delay/") {
        let Ok(ms) = ms.parse::<u64>() else {
            return send(s, req, 400, Some("text/plain"), &[], b"bad delay\n").await;
        };
        let wait = Duration::from_millis(ms);
        sleep_until(received_at, wait).await;
        shared.delay_late(received_at.elapsed().saturating_sub(wait.min(MAX_WAIT)));
        return send_ok(s, req).await;
    }
    if let Some(code) = path.strip_prefix("/status/") {
        return status(s, req, code).await;
    }
    if let Some(n) = path.strip_prefix("/redirect/") {
        return redirect_hops(s, req, n).await;
    }
    if let Some(coding) = path.strip_prefix("/encoded/") {
        return encoded(s, req, coding).await;
    }
    if let Some(n) = path.strip_prefix("/bytes/") {
        let Ok(n) = n.parse::<u64>() else {
            return send(s, req, 400, Some("text/plain"), &[], b"bad length\n").await;
        };
        return bytes(s, req, n).await;
    }
    if path == "/slots" || path.starts_with("/slots/") {
        return slots(s, req, shared).await;
    }
    match path {
        "/stall" => {
            stall(req, received_at, shared).await;
            send_ok(s, req).await
        }
        "/slowing" => {
            let num = |k: &str| req.query_param(k).and_then(|v| v.parse::<f64>().ok());
            let delay = slowing_delay(
                shared.start,
                received_at,
                num("base_ms").unwrap_or(0.0),
                num("per_s_ms").unwrap_or(0.0),
            );
            sleep_until(received_at, delay).await;
            send_ok(s, req).await
        }
        "/reset" => Ok(After::Reset),
        "/garbage" => {
            s.write_all(b"this is not http\r\n\r\n").await?;
            s.flush().await?;
            Ok(After::Close)
        }
        "/close" => send_then_close(s, req, Some(3), b"ok\n").await,
        "/close-silently" => {
            // Like `/close` but without saying so: the client learns of the close
            // only when it reuses the connection.
            send_ok(s, req).await?;
            Ok(After::Close)
        }
        "/chunked" => chunked(s, req).await,
        "/sse" => sse::sse(s, req, received_at, shared).await,
        "/hang" => hang(s).await,
        "/redirect-to" => redirect_to(s, req).await,
        "/echo" => {
            let ctype = req.header("content-type");
            send(s, req, 200, ctype, &[], &req.body).await
        }
        "/headers" | "/multipart" => {
            let body = what_was_sent(req);
            send(s, req, 200, Some("application/json"), &[], body.as_bytes()).await
        }
        "/continue" => {
            s.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await?;
            s.flush().await?;
            send_ok(s, req).await
        }
        "/nocontent" => send_head_only(s, req, 204, None).await,
        // Like real servers: the length of the representation, but no body.
        "/notmodified" => send_head_only(s, req, 304, Some(50)).await,
        "/eof-body" => send_then_close(s, req, None, b"until close\n").await,
        "/partial" => send_then_close(s, req, Some(100), b"0123456789").await,
        "/slow-body" => {
            let ms = req
                .query_param("ms")
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(100);
            let out = head(200, Some("text/plain"), Some(3), &[], conn_header(req)).finish();
            s.write_all(&out).await?;
            s.flush().await?;
            if !req.is_head() {
                sleep_until(received_at, Duration::from_millis(ms)).await;
                s.write_all(b"ok\n").await?;
                s.flush().await?;
            }
            Ok(after(req))
        }
        "/json/login" => {
            let n = shared.login_counter.fetch_add(1, Ordering::Relaxed) + 1;
            let body = format!("{{\"token\":\"tok-{n}\"}}");
            send(s, req, 200, Some("application/json"), &[], body.as_bytes()).await
        }
        "/set-cookie" | "/cookies/set" => {
            // Every query pair becomes a Set-Cookie header (`Max-Age=0` deletes);
            // `/cookies/set` is httpbin's name for it, which k6's examples use.
            let cookies: Vec<String> = req
                .query
                .iter()
                .map(|(k, v)| format!("{k}={v}; Path=/; HttpOnly"))
                .collect();
            let extra: Vec<(&str, &str)> =
                cookies.iter().map(|c| ("Set-Cookie", c.as_str())).collect();
            send(s, req, 200, Some("text/plain"), &extra, b"cookies set\n").await
        }
        "/metrics" => {
            let (ctype, body) = metrics_page(req, shared);
            send(s, req, 200, Some(ctype), &[], body.as_bytes()).await
        }
        "/json/item" => {
            let n = shared.item_counter.fetch_add(1, Ordering::Relaxed) + 1;
            let body = format!("{{\"id\":{n}}}");
            send(s, req, 201, Some("application/json"), &[], body.as_bytes()).await
        }
        _ => send_ok(s, req).await,
    }
}

/// `/slots`, `/slots/set`, `/slots/metrics`, `/slots/state` (see [`crate::slots`]).
async fn slots<S: Transport>(s: &mut S, req: &Request, shared: &Shared) -> io::Result<After> {
    match req.path.as_str() {
        "/slots" => {
            let ms = req
                .query_param("ms")
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(10);
            shared
                .slots
                .hold(Duration::from_millis(ms).min(MAX_WAIT))
                .await;
            send_ok(s, req).await
        }
        "/slots/set" => {
            let n = req.query_param("n").and_then(|v| v.parse::<u64>().ok());
            match n.map(|n| shared.slots.set(n)) {
                Some(Ok(())) => {
                    let body = shared.slots.state_json();
                    send(s, req, 200, Some("application/json"), &[], body.as_bytes()).await
                }
                Some(Err(e)) => send(s, req, 400, Some("text/plain"), &[], e.as_bytes()).await,
                None => send(s, req, 400, Some("text/plain"), &[], b"give ?n=N\n").await,
            }
        }
        "/slots/metrics" => {
            let body = shared.slots.metrics();
            send(
                s,
                req,
                200,
                Some("text/plain; version=0.0.4"),
                &[],
                body.as_bytes(),
            )
            .await
        }
        "/slots/state" => {
            let body = shared.slots.state_json();
            send(s, req, 200, Some("application/json"), &[], body.as_bytes()).await
        }
        _ => {
            send(
                s,
                req,
                404,
                Some("text/plain"),
                &[],
                b"no such slots route\n",
            )
            .await
        }
    }
}

/// `/redirect/{n}`: n hops of 302, each to `/redirect/{n-1}`; `/redirect/0` is `200 ok`.
async fn redirect_hops<S: Transport>(s: &mut S, req: &Request, n: &str) -> io::Result<After> {
    let Ok(n) = n.parse::<u64>() else {
        return send(s, req, 400, Some("text/plain"), &[], b"bad hop count\n").await;
    };
    if n == 0 {
        return send_ok(s, req).await;
    }
    let to = format!("/redirect/{}", n - 1);
    send(
        s,
        req,
        302,
        Some("text/plain"),
        &[("Location", &to)],
        b"found\n",
    )
    .await
}

/// `/stall`: waits out the stall window the request arrived in (if any), counting it.
async fn stall(req: &Request, received_at: Instant, shared: &Shared) {
    let period = req
        .query_param("period_ms")
        .and_then(|v| v.parse::<u64>().ok())
        .map(Duration::from_millis)
        .unwrap_or(shared.opts.stall_period);
    let len = req
        .query_param("stall_ms")
        .and_then(|v| v.parse::<u64>().ok())
        .map(Duration::from_millis)
        .unwrap_or(shared.opts.stall_len);
    if let Some(until) = stall_until(shared.start, received_at, period, len) {
        shared.count_stalled();
        tokio::time::sleep_until(until.into()).await;
    }
}

/// `/hang`: never answers; waits for the client to give up (or for shutdown, which
/// drops this task).
async fn hang<S: Transport>(s: &mut S) -> io::Result<After> {
    let mut scratch = vec![0u8; 8192];
    loop {
        match s.read(&mut scratch).await {
            Ok(0) | Err(_) => return Ok(After::Gone),
            Ok(_) => {}
        }
    }
}

/// `/redirect-to?url=U[&status=S]`: S (default 302) with `Location: U`, as sent.
async fn redirect_to<S: Transport>(s: &mut S, req: &Request) -> io::Result<After> {
    let code = match req.query_param("status").map(str::parse::<u16>) {
        None => 302,
        Some(Ok(c @ 300..=399)) => c,
        Some(_) => return send(s, req, 400, Some("text/plain"), &[], b"bad status\n").await,
    };
    match req.query_param("url") {
        Some(url) if !url.bytes().any(|b| b.is_ascii_control()) => {
            let extra = [("Location", url)];
            send(s, req, code, Some("text/plain"), &extra, b"redirect\n").await
        }
        _ => send(s, req, 400, Some("text/plain"), &[], b"bad url\n").await,
    }
}

/// `/headers`: the request's headers as a JSON object, names lower-cased and
/// repeated values joined with `, ` (as HTTP allows).
/// `/headers`: the request's headers; `/multipart`: the parts of its body.
fn what_was_sent(req: &Request) -> String {
    if req.path == "/multipart" {
        multipart::parts_json(req)
    } else {
        headers_json(req)
    }
}

fn headers_json(req: &Request) -> String {
    let mut map = serde_json::Map::new();
    for (name, value) in &req.headers {
        let name = name.to_ascii_lowercase();
        let joined = match map.get(&name).and_then(|v| v.as_str()) {
            Some(prev) => format!("{prev}, {value}"),
            None => value.clone(),
        };
        map.insert(name, serde_json::Value::String(joined));
    }
    serde_json::Value::Object(map).to_string()
}

/// A head with no body (`204`, `304`), declaring `len` when the status allows it.
async fn send_head_only<S: Transport>(
    s: &mut S,
    req: &Request,
    status: u16,
    len: Option<u64>,
) -> io::Result<After> {
    let out = head(status, None, len, &[], conn_header(req)).finish();
    s.write_all(&out).await?;
    s.flush().await?;
    Ok(after(req))
}

/// A `200` with `Connection: close` that declares `declared` bytes (or none: the body
/// runs until close) and sends `body`, which may be shorter; then closes.
async fn send_then_close<S: Transport>(
    s: &mut S,
    req: &Request,
    declared: Option<u64>,
    body: &[u8],
) -> io::Result<After> {
    let mut out = head(200, Some("text/plain"), declared, &[], Some("close")).finish();
    if !req.is_head() {
        out.extend_from_slice(body);
    }
    s.write_all(&out).await?;
    s.flush().await?;
    Ok(After::Close)
}

/// `/metrics`: Prometheus text (or OpenMetrics with `?format=openmetrics`) of what the
/// server counted, so scrapes can be checked against the truth. Scrapes themselves are
/// excluded from the API counter. Returns the content type and the page.
fn metrics_page(req: &Request, shared: &Shared) -> (&'static str, String) {
    let stats = shared.stats_snapshot();
    let api: u64 = stats
        .by_path
        .iter()
        .filter(|(p, _)| p.as_str() != "/metrics")
        .map(|(_, n)| n)
        .sum();
    let om = req
        .query
        .iter()
        .any(|(k, v)| k == "format" && v == "openmetrics");
    let mut body = String::new();
    body.push_str("# HELP testkit_requests Requests read, scrapes excluded.\n");
    if om {
        body.push_str("# TYPE testkit_requests counter\n");
    } else {
        body.push_str("# TYPE testkit_requests_total counter\n");
    }
    body.push_str(&format!(
        "testkit_requests_total{{server=\"테스트\"}} {api}\n"
    ));
    body.push_str("# TYPE testkit_connections gauge\n");
    body.push_str(&format!("testkit_connections {}\n", stats.connections));
    body.push_str("# TYPE testkit_scrapes_total counter\n");
    let scrapes = stats.by_path.get("/metrics").copied().unwrap_or(0);
    body.push_str(&format!("testkit_scrapes_total {scrapes}\n"));
    if om {
        body.push_str("# EOF\n");
    }
    let ctype = if om {
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    } else {
        "text/plain; version=0.0.4; charset=utf-8"
    };
    (ctype, body)
}

/// `/status/{code}`.
async fn status<S: Transport>(s: &mut S, req: &Request, code: &str) -> io::Result<After> {
    let code = match code.parse::<u16>() {
        // 1xx cannot be a final response.
        Ok(100..=199) => 200,
        Ok(c @ 200..=599) => c,
        _ => return send(s, req, 400, Some("text/plain"), &[], b"bad status code\n").await,
    };
    match code {
        // These never have a body (RFC 9110 §15.3.5, §15.4.5).
        204 | 304 => {
            let out = head(code, None, None, &[], conn_header(req)).finish();
            s.write_all(&out).await?;
            s.flush().await?;
            Ok(after(req))
        }
        205 => send(s, req, code, Some("text/plain"), &[], b"").await,
        _ => {
            let body = format!("status {code}\n");
            send(s, req, code, Some("text/plain"), &[], body.as_bytes()).await
        }
    }
}

/// `/chunked?chunks=N&size=M[&gap_ms=G]`: N chunks of M bytes, each written
/// and flushed on its own (with an optional pause between them).
/// `/encoded/{gzip|br|zstd|deflate|corrupt|bomb}?n=N[&chunked=1]`: [`crate::encoded_body`]
/// with its `Content-Encoding` (`corrupt`: gzip's header on bytes that are not
/// gzip; `bomb`: [`crate::brotli_bomb`], labelled `br`), framed by `Content-Length`, or chunked in 1000-byte chunks.
async fn encoded<S: Transport>(s: &mut S, req: &Request, coding: &str) -> io::Result<After> {
    let n = req
        .query_param("n")
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(100)
        .min(1 << 20);
    let (name, body) = if coding == "corrupt" {
        ("gzip", b"this is not a gzip stream at all".to_vec())
    } else if coding == "bomb" {
        ("br", crate::brotli_bomb().to_vec())
    } else {
        match crate::encoded_body(coding, n) {
            Some(b) => (coding, b),
            None => return send(s, req, 400, Some("text/plain"), &[], b"unknown coding\n").await,
        }
    };
    if req.query_param("chunked").is_none() {
        let extra = [("Content-Encoding", name)];
        return send(s, req, 200, Some("text/plain"), &extra, &body).await;
    }
    let out = head(
        200,
        Some("text/plain"),
        None,
        &[("Content-Encoding", name), ("Transfer-Encoding", "chunked")],
        conn_header(req),
    )
    .finish();
    s.write_all(&out).await?;
    for c in body.chunks(1000) {
        s.write_all(format!("{:x}\r\n", c.len()).as_bytes()).await?;
        s.write_all(c).await?;
        s.write_all(b"\r\n").await?;
    }
    s.write_all(b"0\r\n\r\n").await?;
    s.flush().await?;
    Ok(after(req))
}

async fn chunked<S: Transport>(s: &mut S, req: &Request) -> io::Result<After> {
    let num = |name: &str, default: u64| match req.query_param(name) {
        None => Some(default),
        Some(v) => v.parse::<u64>().ok(),
    };
    let (Some(chunks), Some(size), Some(gap_ms)) =
        (num("chunks", 3), num("size", 10), num("gap_ms", 0))
    else {
        return send(
            s,
            req,
            400,
            Some("text/plain"),
            &[],
            b"bad chunk parameters\n",
        )
        .await;
    };
    if size > MAX_CHUNK {
        return send(s, req, 400, Some("text/plain"), &[], b"chunk too large\n").await;
    }
    let out = head(
        200,
        Some("text/plain"),
        None,
        &[("Transfer-Encoding", "chunked")],
        conn_header(req),
    )
    .finish();
    s.write_all(&out).await?;
    s.flush().await?;
    if req.is_head() {
        return Ok(after(req));
    }
    if chunks > 0 && size > 0 {
        // Safe: size <= MAX_CHUNK.
        let mut chunk = Vec::new();
        http::write_chunk(&mut chunk, &vec![b'x'; size as usize]);
        for i in 0..chunks {
            if i > 0 && gap_ms > 0 {
                tokio::time::sleep(Duration::from_millis(gap_ms).min(MAX_WAIT)).await;
            }
            s.write_all(&chunk).await?;
            s.flush().await?;
        }
    }
    s.write_all(http::LAST_CHUNK).await?;
    s.flush().await?;
    Ok(after(req))
}

/// `a..z` repeated, long enough that any 64 KiB window starting at an
/// offset below 26 continues the pattern.
fn pattern() -> &'static [u8] {
    static PATTERN: OnceLock<Vec<u8>> = OnceLock::new();
    PATTERN.get_or_init(|| (0..PIECE + 26).map(|i| b'a' + (i % 26) as u8).collect())
}

/// `/bytes/{n}`: an n-byte body written in 64 KiB pieces, never held whole.
async fn bytes<S: Transport>(s: &mut S, req: &Request, n: u64) -> io::Result<After> {
    let mut out = head(200, Some("text/plain"), Some(n), &[], conn_header(req)).finish();
    if req.is_head() {
        s.write_all(&out).await?;
        s.flush().await?;
        return Ok(after(req));
    }
    let pat = pattern();
    // `?end=TEXT`: the body's last bytes are TEXT (a marker only the whole body has).
    let tail = req.query_param("end").unwrap_or_default();
    let tail = &tail.as_bytes()[..tail.len().min(n as usize)];
    let n = n - tail.len() as u64;
    let mut written: u64 = 0;
    while written < n {
        let piece = (n - written).min(PIECE as u64) as usize;
        let offset = (written % 26) as usize;
        if out.is_empty() {
            s.write_all(&pat[offset..offset + piece]).await?;
        } else {
            // The head goes out together with the first piece.
            out.extend_from_slice(&pat[offset..offset + piece]);
            s.write_all(&out).await?;
            out.clear();
        }
        written += piece as u64;
    }
    out.extend_from_slice(tail);
    if !out.is_empty() {
        s.write_all(&out).await?;
    }
    s.flush().await?;
    Ok(after(req))
}

async fn send_ok<S: Transport>(s: &mut S, req: &Request) -> io::Result<After> {
    send(s, req, 200, Some("text/plain"), &[], b"ok\n").await
}

/// Writes a complete response with a Content-Length (no body for HEAD) in one write.
async fn send<S: Transport>(
    s: &mut S,
    req: &Request,
    code: u16,
    ctype: Option<&str>,
    extra: &[(&str, &str)],
    body: &[u8],
) -> io::Result<After> {
    let head = head(
        code,
        ctype,
        Some(body.len() as u64),
        extra,
        conn_header(req),
    );
    http::write_response(s, head, body, req.is_head()).await?;
    Ok(after(req))
}

/// Whether the connection stays open after answering `req`.
fn after(req: &Request) -> After {
    if req.keep_alive {
        After::KeepAlive
    } else {
        After::Close
    }
}

/// The `Connection` header the response needs, if any.
fn conn_header(req: &Request) -> Option<&'static str> {
    http::connection_value(req.keep_alive, req.version)
}

/// Starts a response head (status line, `Server`, then the headers given); the
/// caller finishes it.
fn head(
    code: u16,
    ctype: Option<&str>,
    length: Option<u64>,
    extra: &[(&str, &str)],
    connection: Option<&str>,
) -> http::Head {
    let mut h = http::Head::new(code);
    h.header("Server", "pado-testkit");
    if let Some(ct) = ctype {
        h.header("Content-Type", ct);
    }
    if let Some(len) = length {
        h.content_length(len);
    }
    for (name, value) in extra {
        h.header(name, value);
    }
    h.connection(connection);
    h
}

/// Sleeps until `wait` after `from` (clamped to [`MAX_WAIT`]).
async fn sleep_until(from: Instant, wait: Duration) {
    let deadline = from.checked_add(wait.min(MAX_WAIT)).unwrap_or(from);
    tokio::time::sleep_until(deadline.into()).await;
}

/// The `/slowing` delay: `base_ms` plus `per_s_ms` for every second since `start`
/// (fractions count), so a test knows the exact slope of latency over time: a
/// leak's signature under steady load. Negative or non-finite figures count as 0.
pub(crate) fn slowing_delay(start: Instant, at: Instant, base_ms: f64, per_s_ms: f64) -> Duration {
    let clean = |v: f64| if v.is_finite() { v.max(0.0) } else { 0.0 };
    let t = at.saturating_duration_since(start).as_secs_f64();
    let ms = clean(base_ms) + clean(per_s_ms) * t;
    Duration::from_secs_f64((ms / 1000.0).min(MAX_WAIT.as_secs_f64()))
}

/// If `at` falls in a stall window — the last `len` of every `period` since
/// `start` — returns when that window ends.
pub(crate) fn stall_until(
    start: Instant,
    at: Instant,
    period: Duration,
    len: Duration,
) -> Option<Instant> {
    let period = period.min(MAX_WAIT);
    let len = len.min(period);
    if period.is_zero() || len.is_zero() {
        return None;
    }
    let t = at.saturating_duration_since(start).as_nanos();
    let p = period.as_nanos();
    let phase = t % p;
    if phase < p - len.as_nanos() {
        return None;
    }
    let end = u64::try_from(t - phase + p).ok()?;
    start.checked_add(Duration::from_nanos(end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stall_windows() {
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let p = Duration::from_secs(5);
        let l = Duration::from_secs(1);
        assert_eq!(stall_until(start, at(0), p, l), None);
        assert_eq!(stall_until(start, at(3999), p, l), None);
        assert_eq!(stall_until(start, at(4000), p, l), Some(at(5000)));
        assert_eq!(stall_until(start, at(4999), p, l), Some(at(5000)));
        assert_eq!(stall_until(start, at(5000), p, l), None);
        assert_eq!(stall_until(start, at(9500), p, l), Some(at(10000)));
        assert_eq!(stall_until(start, at(9500), Duration::ZERO, l), None);
        assert_eq!(stall_until(start, at(9500), p, Duration::ZERO), None);
    }

    #[test]
    fn pattern_continues_across_pieces() {
        let pat = pattern();
        for offset in 0..26 {
            assert_eq!(pat[offset], b'a' + offset as u8);
            assert_eq!(
                pat[offset + PIECE - 1],
                b'a' + ((offset + PIECE - 1) % 26) as u8
            );
        }
    }
}
