//! One HTTP/2 request/response exchange on a stream of the worker's pool
//! ([`crate::h2conn`]), timed in the same phases as HTTP/1.1 and with the same shape
//! of result ([`Exchange`]): blocked (waiting for a stream slot or for a connection
//! another VU is opening), connecting and tls (when this request opened the
//! connection), sending (until the request, body included, is handed to the
//! connection), waiting (until the response headers), receiving (the body).
//!
//! **Bytes.** A shared, compressed connection does not assign its wire bytes to one
//! request; over HTTP/2 a request's bytes are its header fields (name and value
//! lengths, pseudo-headers included, as HPACK sizes them before compression, less
//! its 32-byte overhead) and body, and so are the response's.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use http::{HeaderMap, Method, Uri};
use pado_metrics::{ErrorKind, HttpVersion, NewConnection};

use crate::conn::{io_error_kind, Conn, Origin, SetupTimes};
use crate::exchange::{end_decoding, is_redirect, keep, settle, BodySink, Exchange, RequestRef};
use crate::h2conn::{Acquired, H2Conn, H2Pool, StreamSlot};
use h2::client::SendRequest;

/// A request as HTTP/2 sends it: method, URI (scheme, authority, path), headers
/// without the connection-specific ones, body. Built once at compile time for a
/// static request; from the rendered HTTP/1.1 text for a templated one.
#[derive(Clone, Debug)]
pub struct H2Request {
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
    /// Header fields and body, as counted in [`Exchange::bytes_sent`].
    size: u64,
}

/// Headers HTTP/2 forbids (RFC 9113 §8.2.2); `Host` becomes `:authority`.
fn connection_specific(name: &[u8]) -> bool {
    const NAMES: [&[u8]; 6] = [
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"transfer-encoding",
        b"upgrade",
        b"te",
    ];
    NAMES.iter().any(|n| n.eq_ignore_ascii_case(name))
}

impl H2Request {
    /// The request of `bytes` (HTTP/1.1 text as the plan builds it: request line,
    /// headers, blank line, body) for `origin`. An error names what could not be
    /// sent over HTTP/2.
    pub fn from_http1(bytes: &[u8], origin: &Origin) -> Result<H2Request, &'static str> {
        let mut fields = [httparse::EMPTY_HEADER; 64];
        let mut parsed = httparse::Request::new(&mut fields);
        let head_len = match parsed.parse(bytes) {
            Ok(httparse::Status::Complete(n)) => n,
            _ => return Err("the request's head is not valid HTTP"),
        };
        let method = Method::from_bytes(parsed.method.unwrap_or("GET").as_bytes())
            .map_err(|_| "the request's method is not a valid token")?;
        let path = parsed.path.unwrap_or("/");
        let mut authority: Option<&[u8]> = None;
        let mut headers = HeaderMap::with_capacity(parsed.headers.len());
        let mut size = (method.as_str().len() + path.len() + 7 + 10) as u64;
        for h in parsed.headers.iter() {
            let name = h.name.as_bytes();
            if name.eq_ignore_ascii_case(b"host") {
                authority = Some(h.value);
                continue;
            }
            if connection_specific(name) {
                continue;
            }
            let n = HeaderName::from_bytes(name).map_err(|_| "a header name is not valid")?;
            let v = HeaderValue::from_bytes(h.value).map_err(|_| "a header value is not valid")?;
            size += (name.len() + h.value.len()) as u64;
            headers.append(n, v);
        }
        let scheme = if origin.tls.is_some() {
            "https"
        } else {
            "http"
        };
        let authority = match authority {
            Some(a) => String::from_utf8_lossy(a).into_owned(),
            None => format!("{}:{}", origin.host, origin.port),
        };
        size += authority.len() as u64 + 10 + scheme.len() as u64 + 7;
        let uri = Uri::builder()
            .scheme(scheme)
            .authority(authority)
            .path_and_query(path)
            .build()
            .map_err(|_| "the request's URL is not valid")?;
        let body = Bytes::copy_from_slice(&bytes[head_len..]);
        size += body.len() as u64;
        Ok(H2Request {
            method,
            uri,
            headers,
            body,
            size,
        })
    }

    fn to_request(&self) -> http::Request<()> {
        let mut r = http::Request::new(());
        *r.method_mut() = self.method.clone();
        *r.uri_mut() = self.uri.clone();
        *r.headers_mut() = self.headers.clone();
        r
    }
}

/// The origin spoke HTTP/1.1 (`auto` over https): send the request on the VU's own
/// connection, this one when the pool just opened it (its setup times with it).
pub struct UseHttp1(pub Option<(Conn, SetupTimes)>);

/// Run one exchange over HTTP/2: a stream slot from `pool` (opening a connection
/// when all are full), the request (`prebuilt`, or made from `req.bytes`), the
/// response read in full. `Err` when the origin turned out to speak HTTP/1.1.
pub async fn exchange_h2(
    pool: &H2Pool,
    origin: &Origin,
    req: RequestRef<'_>,
    prebuilt: Option<&H2Request>,
) -> Result<Exchange, UseHttp1> {
    let mut ex = Exchange::default();
    exchange_h2_into(pool, origin, req, prebuilt, &mut ex).await?;
    Ok(ex)
}

/// [`exchange_h2`], its figures written into `ex` (reset first) rather than
/// returned: the VU keeps its request's [`Exchange`] in place, as with
/// [`crate::exchange_into`].
pub async fn exchange_h2_into(
    pool: &H2Pool,
    origin: &Origin,
    req: RequestRef<'_>,
    prebuilt: Option<&H2Request>,
    ex: &mut Exchange,
) -> Result<(), UseHttp1> {
    let start = Instant::now();
    let deadline = start + req.timeout;
    *ex = Exchange::default();
    let built;
    let request = match prebuilt {
        Some(r) => r,
        None => match H2Request::from_http1(req.bytes, origin) {
            Ok(r) => {
                built = r;
                &built
            }
            Err(why) => {
                ex.error = Some(ErrorKind::Protocol);
                ex.reason = Some(why);
                ex.end = Some(Instant::now());
                return Ok(());
            }
        },
    };
    // An event stream read for `max_time` ends then, as a success.
    let sse_end = req.sse.as_ref().and_then(|s| s.max_time).map(|t| start + t);
    let mut sink = BodySink::new(req.keep_body, req.keep_head, req.failed_prefix, req.decoder);
    sink.sse = req.sse;
    sink.clear();
    // Each phase boundary reads the clock once: the reading that ends one phase
    // starts the next (clock reads were 4% of an HTTP/2 request's CPU).
    let mut t_head = start;
    let run = async {
        let (slot, ready, t_send) = match ready_stream(
            pool,
            origin,
            req.timeout,
            start,
            &mut *ex,
            CLOSED_BEFORE_REQUEST,
        )
        .await
        {
            Ready::Stream(slot, ready, t_send) => (slot, ready, t_send),
            Ready::Http1(conn) => return Err(UseHttp1(conn)),
            Ready::Failed => return Ok(()),
        };
        let sent = ready.and_then(|mut send| {
            let body_empty = request.body.is_empty();
            let (response, mut stream) = send.send_request(request.to_request(), body_empty)?;
            if !body_empty {
                stream.send_data(request.body.clone(), true)?;
            }
            Ok(response)
        });
        let t_sent = Instant::now();
        ex.sending = t_sent - t_send;
        let tls = origin.tls.is_some();
        let response = match sent {
            Ok(r) => r,
            Err(e) => {
                fail(&mut *ex, &e, &slot.conn, tls);
                return Ok(());
            }
        };
        ex.bytes_sent = request.size;
        let response = match response.await {
            Ok(r) => r,
            Err(e) => {
                fail(&mut *ex, &e, &slot.conn, tls);
                return Ok(());
            }
        };
        t_head = Instant::now();
        ex.waiting = t_head - t_sent;
        read_response(response, req.is_head, &mut sink, &mut *ex, &slot.conn, tls).await;
        Ok(())
    };
    let outcome =
        tokio::time::timeout_at(sse_end.map_or(deadline, |e| e.min(deadline)).into(), run).await;
    let end = Instant::now();
    let timed_out = match outcome {
        // The stream was read for as long as asked: its answer, not a timeout.
        Err(_) if sse_end.is_some_and(|e| e < deadline) && ex.status != 0 => false,
        Err(_) => true,
        Ok(Err(fallback)) => return Err(fallback),
        Ok(Ok(())) => false,
    };
    if !timed_out && ex.error.is_none() {
        ex.receiving = end - t_head;
    }
    settle(ex, end, timed_out);
    sink.cut_to_cap(ex);
    Ok(())
}

/// Reads a response's head and body into `sink`, counting its bytes; a failed
/// stream is recorded in `ex`.
#[inline]
async fn read_response(
    response: http::Response<h2::RecvStream>,
    is_head: bool,
    sink: &mut BodySink<'_>,
    ex: &mut Exchange,
    conn: &H2Conn,
    tls: bool,
) {
    let (parts, mut body) = response.into_parts();
    let status = parts.status.as_u16();
    ex.status = status;
    ex.bytes_received = 10 + fields_size(&parts.headers);
    if let Some((out, always)) = sink.keep_head.as_mut() {
        if *always || parts.headers.contains_key(http::header::SET_COOKIE) || is_redirect(status) {
            write_head(out, status, &parts.headers);
        }
    }
    sink.keep_failure_prefix(status);
    // An encoded body is decoded as it streams, as over HTTP/1.1.
    let coding = parts
        .headers
        .get(http::header::CONTENT_ENCODING)
        .and_then(|v| crate::decode::Coding::of_header(v.as_bytes()));
    let mut dec = match (coding, sink.decoder.as_deref_mut()) {
        (Some(c), Some(d)) if !is_head && status != 204 && status != 304 => {
            d.begin(c, sink.keep_body.as_ref().map_or(0, |k| k.1));
            Some(d)
        }
        _ => None,
    };
    // An event stream is parsed when the answer is one (2xx, not encoded).
    let mut sse = sink
        .sse
        .as_mut()
        .filter(|_| (200..300).contains(&status) && dec.is_none());
    while let Some(chunk) = next_chunk(&mut body, ex, conn, tls).await {
        let Ok(chunk) = chunk else {
            if sse.as_ref().is_some_and(|s| !s.parser.stopped()) {
                ex.error = Some(ErrorKind::SseTruncated);
            }
            return;
        };
        match dec.as_mut() {
            Some(d) => d.feed(&chunk),
            None => keep(&mut sink.keep_body, &chunk),
        }
        if let Some(s) = sse.as_mut() {
            if !s.parser.feed(&chunk, Instant::now(), &mut *s.handler) {
                // Stopped: the rest is not read (dropping the stream cancels it).
                return;
            }
        }
    }
    if sse.is_some_and(|s| s.parser.pending()) {
        ex.error = Some(ErrorKind::SseTruncated);
    }
    if let Some(d) = dec {
        end_decoding(d, &mut sink.keep_body, ex);
    }
}

/// The reason of a request whose connection closed before it could be sent.
const CLOSED_BEFORE_REQUEST: &str = "the connection closed before the request could be sent";

/// A stream of the pool ready to send on (or why not).
pub(crate) enum Ready {
    /// The slot, the sender once the server's stream limit allows (or the error it
    /// failed with), and when it became ready (sending starts).
    Stream(StreamSlot, Result<SendRequest<Bytes>, h2::Error>, Instant),
    /// The origin speaks HTTP/1.1 (see [`Acquired::Http1`]).
    Http1(Option<(Conn, SetupTimes)>),
    /// No stream: the failure is in the exchange.
    Failed,
}

/// A stream slot from `pool` for an exchange that began at `start`, with the setup
/// (when this exchange opened the connection) and blocked time recorded in `ex`.
/// `closed` is the reason given when the connection closed before the exchange
/// could be sent.
#[inline]
pub(crate) async fn ready_stream(
    pool: &H2Pool,
    origin: &Origin,
    timeout: Duration,
    start: Instant,
    ex: &mut Exchange,
    closed: &'static str,
) -> Ready {
    let (slot, opened) = match pool.acquire(origin, timeout).await {
        Acquired::Stream(slot, setup) => {
            let opened = setup.is_some();
            if let Some(t) = setup {
                ex.setup = t;
                ex.opened = NewConnection::opened(origin.tls.is_some());
            }
            (slot, opened)
        }
        Acquired::Http1(conn) => return Ready::Http1(conn),
        Acquired::Failed(e) => {
            ex.error = Some(e.kind);
            ex.reason = e.reason;
            return Ready::Failed;
        }
    };
    let Some(send) = slot.conn.sender() else {
        ex.error = Some(ErrorKind::GoAway);
        ex.reason = Some(closed);
        return Ready::Failed;
    };
    ex.version = Some(HttpVersion::Http2);
    // Waiting for the server's stream limit, when the pool's count was ahead of
    // its settings, is blocked time too.
    let t_ready = Instant::now();
    if !opened {
        // Waiting for a stream slot on an open connection.
        ex.blocked = t_ready - start;
    }
    let ready = send.ready().await;
    let t_send = Instant::now();
    ex.blocked += t_send - t_ready;
    ex.sent_at = Some(t_send);
    Ready::Stream(slot, ready, t_send)
}

/// The next DATA of a response body, its bytes counted and its flow-control window
/// given back; `Some(Err(()))` when the stream failed (recorded in `ex`), `None` at
/// the body's end.
#[inline]
pub(crate) async fn next_chunk(
    body: &mut h2::RecvStream,
    ex: &mut Exchange,
    conn: &H2Conn,
    tls: bool,
) -> Option<Result<Bytes, ()>> {
    match body.data().await? {
        Ok(chunk) => {
            ex.bytes_received += chunk.len() as u64;
            let _ = body.flow_control().release_capacity(chunk.len());
            Some(Ok(chunk))
        }
        Err(e) => {
            fail(ex, &e, conn, tls);
            Some(Err(()))
        }
    }
}

/// The size of header fields as HPACK counts them before compression (name and
/// value lengths, without its 32-byte overhead).
#[inline]
pub(crate) fn fields_size(headers: &HeaderMap) -> u64 {
    headers
        .iter()
        .map(|(n, v)| (n.as_str().len() + v.len()) as u64)
        .sum()
}

/// The category and reason of a failed stream; a `GOAWAY` also takes its
/// connection out of the pool's choice.
pub(crate) fn fail(ex: &mut Exchange, e: &h2::Error, conn: &crate::h2conn::H2Conn, tls: bool) {
    let (kind, reason) = if conn.answered_http1() {
        (
            ErrorKind::H2cUnsupported,
            Some(crate::h2sniff::H2C_UNSUPPORTED),
        )
    } else {
        classify(e, conn.gone_away(), tls)
    };
    if kind == ErrorKind::GoAway {
        conn.going_away();
    }
    ex.error = Some(kind);
    ex.reason = reason;
}

/// An h2 error as pado counts it. `gone_away`: the connection had already been
/// told `GOAWAY`, so a stream lost with it is the `GOAWAY`'s.
fn classify(e: &h2::Error, gone_away: bool, tls: bool) -> (ErrorKind, Option<&'static str>) {
    let reason = e.reason().map(reason_name);
    if e.is_go_away() && e.is_remote() {
        return (ErrorKind::GoAway, reason);
    }
    if e.is_reset() && e.is_remote() {
        return (ErrorKind::StreamReset, reason);
    }
    // h2 itself refuses a header list past `max_header_list_size` (the stream,
    // REFUSED_STREAM) and a CONTINUATION flood (the connection, ENHANCE_YOUR_CALM,
    // or COMPRESSION_ERROR for an oversized block it could not skip).
    if !e.is_remote() {
        match e.reason() {
            Some(h2::Reason::REFUSED_STREAM) if e.is_reset() => {
                return (
                    ErrorKind::TooLarge,
                    Some("the response's header list was larger than 64 KiB"),
                )
            }
            Some(h2::Reason::ENHANCE_YOUR_CALM | h2::Reason::COMPRESSION_ERROR)
                if e.is_go_away() =>
            {
                return (
                    ErrorKind::TooLarge,
                    Some(
                        "the server sent a header block larger than 64 KiB (a CONTINUATION flood)",
                    ),
                )
            }
            _ => {}
        }
    }
    if let Some(io) = e.get_io() {
        if gone_away {
            return (
                ErrorKind::GoAway,
                Some("the connection closed after GOAWAY"),
            );
        }
        return (io_error_kind(io, tls), None);
    }
    if gone_away {
        return (ErrorKind::GoAway, reason);
    }
    (
        ErrorKind::Protocol,
        reason.or(Some("HTTP/2 protocol error")),
    )
}

/// An HTTP/2 error code by its name in RFC 9113 §7.
fn reason_name(r: h2::Reason) -> &'static str {
    match r {
        h2::Reason::NO_ERROR => "NO_ERROR",
        h2::Reason::PROTOCOL_ERROR => "PROTOCOL_ERROR",
        h2::Reason::INTERNAL_ERROR => "INTERNAL_ERROR",
        h2::Reason::FLOW_CONTROL_ERROR => "FLOW_CONTROL_ERROR",
        h2::Reason::SETTINGS_TIMEOUT => "SETTINGS_TIMEOUT",
        h2::Reason::STREAM_CLOSED => "STREAM_CLOSED",
        h2::Reason::FRAME_SIZE_ERROR => "FRAME_SIZE_ERROR",
        h2::Reason::REFUSED_STREAM => "REFUSED_STREAM",
        h2::Reason::CANCEL => "CANCEL",
        h2::Reason::COMPRESSION_ERROR => "COMPRESSION_ERROR",
        h2::Reason::CONNECT_ERROR => "CONNECT_ERROR",
        h2::Reason::ENHANCE_YOUR_CALM => "ENHANCE_YOUR_CALM",
        h2::Reason::INADEQUATE_SECURITY => "INADEQUATE_SECURITY",
        h2::Reason::HTTP_1_1_REQUIRED => "HTTP_1_1_REQUIRED",
        _ => "unknown error code",
    }
}

/// The response head as HTTP/1.1-style text (`HTTP/2 200`, then `name: value`
/// lines), which is what checks, extraction, cookies and redirects read.
fn write_head(out: &mut Vec<u8>, status: u16, headers: &HeaderMap) {
    out.extend_from_slice(b"HTTP/2 ");
    out.extend_from_slice(itoa_status(status).as_bytes());
    out.extend_from_slice(b"\r\n");
    for (n, v) in headers {
        out.extend_from_slice(n.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(v.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

fn itoa_status(status: u16) -> String {
    status.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(tls: bool) -> Origin {
        let url = url::Url::parse(if tls {
            "https://example.test:8443/"
        } else {
            "http://127.0.0.1:8080/"
        })
        .unwrap();
        Origin::for_url_with(
            &url,
            crate::Protocol::Http2,
            || crate::tls_client_config(true),
            || crate::tls_client_config_alpn(true, &[b"h2"]),
        )
        .unwrap()
    }

    #[test]
    fn an_http1_request_becomes_its_http2_form() {
        let h1 = b"POST /a/b?x=1 HTTP/1.1\r\nHost: api.test:8080\r\nConnection: keep-alive\r\nContent-Type: application/json\r\nX-Two: 1\r\nX-Two: 2\r\nContent-Length: 7\r\n\r\n{\"a\":1}";
        let r = H2Request::from_http1(h1, &origin(false)).unwrap();
        assert_eq!(r.method, Method::POST);
        assert_eq!(r.uri.to_string(), "http://api.test:8080/a/b?x=1");
        assert!(r.headers.get("host").is_none(), "Host is :authority");
        assert!(r.headers.get("connection").is_none());
        assert_eq!(r.headers.get_all("x-two").iter().count(), 2);
        assert_eq!(r.headers["content-type"], "application/json");
        assert_eq!(&r.body[..], b"{\"a\":1}");
        let tls = H2Request::from_http1(b"GET / HTTP/1.1\r\n\r\n", &origin(true)).unwrap();
        assert_eq!(tls.uri.to_string(), "https://example.test:8443/");
        assert!(
            H2Request::from_http1(b"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n", &origin(false))
                .is_err()
        );
    }

    #[test]
    fn the_kept_head_reads_like_http1() {
        let mut h = HeaderMap::new();
        h.append("location", HeaderValue::from_static("/next"));
        h.append("set-cookie", HeaderValue::from_static("a=1"));
        let mut out = Vec::new();
        write_head(&mut out, 302, &h);
        assert_eq!(
            out,
            b"HTTP/2 302\r\nlocation: /next\r\nset-cookie: a=1\r\n\r\n"
        );
    }

    #[test]
    fn error_codes_have_their_rfc_names() {
        assert_eq!(reason_name(h2::Reason::REFUSED_STREAM), "REFUSED_STREAM");
        assert_eq!(reason_name(h2::Reason::from(0xff)), "unknown error code");
    }
}
