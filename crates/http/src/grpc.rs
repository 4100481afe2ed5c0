//! One gRPC call (unary or server streaming) on an HTTP/2 stream of the worker's
//! pool ([`crate::h2conn`]): the request's headers and one length-prefixed message
//! out, the reply's messages split from the DATA frames as they arrive, the call's
//! status read from the trailers (or from the headers of a trailers-only answer).
//! Timed in the same phases as any HTTP/2 exchange: sending until the message is
//! handed to the connection, waiting until the response headers, receiving until
//! the trailers (for a stream, the whole stream).
//!
//! Nothing here knows protobuf: messages are bytes; the engine encodes and decodes
//! them with their descriptors.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use http::{HeaderMap, Method, Uri};
use pado_metrics::ErrorKind;

use crate::conn::Origin;
use crate::exchange::{settle, Exchange};
use crate::h2conn::H2Pool;
use crate::h2exchange::{fail, fields_size, next_chunk, ready_stream, Ready};

/// The fixed part of a call, built once at compile time: its URI
/// (`/package.Service/Method` on the origin) and headers (`content-type`, `te`,
/// `grpc-timeout`, `user-agent` and the static metadata).
#[derive(Clone, Debug)]
pub struct GrpcRequest {
    pub(crate) uri: Uri,
    pub(crate) headers: HeaderMap,
    /// Header fields as [`Exchange::bytes_sent`] counts them (see
    /// [`crate::h2exchange`]).
    pub(crate) size: u64,
}

/// Why a call's request could not be made.
#[derive(Debug, thiserror::Error)]
pub enum GrpcRequestError {
    /// The method's path is not a valid URI path.
    #[error("`{0}` is not a valid gRPC method path")]
    Path(String),
    /// A metadata name or value cannot be sent as an HTTP/2 header.
    #[error("metadata `{0}` is not a valid header")]
    Metadata(String),
}

impl GrpcRequest {
    /// The call of `path` (`/package.Service/Method`) on `origin` with these
    /// metadata entries; `timeout` is sent as `grpc-timeout`.
    pub fn new(
        origin: &Origin,
        path: &str,
        metadata: &[(String, String)],
        timeout: Duration,
    ) -> Result<GrpcRequest, GrpcRequestError> {
        let scheme = if origin.tls.is_some() {
            "https"
        } else {
            "http"
        };
        let authority = format!("{}:{}", origin.host, origin.port);
        let uri = Uri::builder()
            .scheme(scheme)
            .authority(authority.as_str())
            .path_and_query(path)
            .build()
            .map_err(|_| GrpcRequestError::Path(path.to_string()))?;
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/grpc"),
        );
        headers.insert(http::header::TE, HeaderValue::from_static("trailers"));
        headers.insert(
            http::header::USER_AGENT,
            HeaderValue::from_static(concat!("pado/", env!("CARGO_PKG_VERSION"))),
        );
        if let Ok(v) = HeaderValue::from_str(&grpc_timeout(timeout)) {
            headers.insert(HeaderName::from_static("grpc-timeout"), v);
        }
        for (k, v) in metadata {
            let n = HeaderName::from_bytes(k.to_ascii_lowercase().as_bytes())
                .map_err(|_| GrpcRequestError::Metadata(k.clone()))?;
            let v = HeaderValue::from_str(v).map_err(|_| GrpcRequestError::Metadata(k.clone()))?;
            headers.append(n, v);
        }
        // Pseudo-headers (:method POST, :scheme, :authority, :path) and fields.
        let mut size = (4 + 7 + scheme.len() + 7 + authority.len() + 10 + path.len() + 5) as u64;
        for (n, v) in &headers {
            size += (n.as_str().len() + v.len()) as u64;
        }
        Ok(GrpcRequest { uri, headers, size })
    }
}

/// `grpc-timeout`'s form: at most 8 digits and a unit (milliseconds, or seconds
/// when that does not fit).
fn grpc_timeout(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 100_000_000 {
        format!("{ms}m")
    } else {
        format!("{}S", d.as_secs().min(99_999_999))
    }
}

/// `message` with gRPC's length prefix (uncompressed), appended to `out`.
pub fn frame_message(message: &[u8], out: &mut Vec<u8>) {
    out.push(0);
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
}

/// One call to make.
pub struct GrpcCall<'a> {
    /// The fixed request.
    pub request: &'a GrpcRequest,
    /// Metadata rendered for this call (templated values).
    pub metadata: &'a [(HeaderName, HeaderValue)],
    /// The length-prefixed request message.
    pub body: Bytes,
    /// Deadline of the whole call, connection setup included.
    pub timeout: Duration,
    /// Stop reading (cancelling the stream) after this many messages.
    pub max_messages: Option<u64>,
    /// The largest message accepted (a longer one fails the call as `protocol`).
    pub max_message: usize,
}

/// What one call produced.
#[derive(Clone, Copy, Debug, Default)]
pub struct GrpcOutcome {
    /// The exchange's phases, bytes and transport failure (`status` is HTTP's).
    pub exchange: Exchange,
    /// The call's gRPC status code (`None` after a transport failure, or for a
    /// stream cut at `max_messages`; [`NO_STATUS_CODE`], with a `protocol` failure,
    /// when the server ended the response without one).
    pub code: Option<u16>,
    /// Messages received.
    pub messages: u64,
    /// The reading stopped at `max_messages` (the stream was cancelled).
    pub limited: bool,
}

/// The gRPC code an HTTP status stands for when a response carries no
/// `grpc-status` (gRPC's "HTTP to gRPC status code mapping").
pub fn code_of_http_status(status: u16) -> u16 {
    match status {
        400 => 13,
        401 => 16,
        403 => 7,
        404 => 12,
        429 | 502..=504 => 14,
        _ => 2,
    }
}

/// Make one call: a stream slot from `pool`, the request, each reply message handed
/// to `on_message` as it is complete (with the instant it was), the status from the
/// trailers. `frame` is the caller's reused buffer for messages split across
/// frames.
pub async fn exchange_grpc(
    pool: &H2Pool,
    origin: &Origin,
    call: GrpcCall<'_>,
    frame: &mut Vec<u8>,
    mut on_message: impl FnMut(&[u8], Instant),
) -> GrpcOutcome {
    let start = Instant::now();
    let deadline = start + call.timeout;
    let mut out = GrpcOutcome::default();
    frame.clear();
    let run = async {
        let ex = &mut out.exchange;
        let closed = "the connection closed before the call could be sent";
        let (slot, ready, t_send) =
            match ready_stream(pool, origin, call.timeout, start, ex, closed).await {
                Ready::Stream(slot, ready, t_send) => (slot, ready, t_send),
                Ready::Http1(_) => {
                    ex.error = Some(ErrorKind::H2NotNegotiated);
                    ex.reason = Some("gRPC needs HTTP/2 and the server chose HTTP/1.1");
                    return;
                }
                Ready::Failed => return,
            };
        let tls = origin.tls.is_some();
        let sent = ready.and_then(|mut send| {
            let mut r = http::Request::new(());
            *r.method_mut() = Method::POST;
            *r.uri_mut() = call.request.uri.clone();
            let mut headers = call.request.headers.clone();
            for (n, v) in call.metadata {
                headers.append(n.clone(), v.clone());
            }
            *r.headers_mut() = headers;
            let (response, mut stream) = send.send_request(r, false)?;
            stream.send_data(call.body.clone(), true)?;
            Ok(response)
        });
        let t_sent = Instant::now();
        ex.sending = t_sent - t_send;
        let response = match sent {
            Ok(r) => r,
            Err(e) => {
                fail(ex, &e, &slot.conn, tls);
                return;
            }
        };
        ex.bytes_sent = call.request.size
            + call
                .metadata
                .iter()
                .map(|(n, v)| (n.as_str().len() + v.len()) as u64)
                .sum::<u64>()
            + call.body.len() as u64;
        let response = match response.await {
            Ok(r) => r,
            Err(e) => {
                fail(ex, &e, &slot.conn, tls);
                return;
            }
        };
        let t_head = Instant::now();
        ex.waiting = t_head - t_sent;
        let (parts, mut body) = response.into_parts();
        ex.status = parts.status.as_u16();
        ex.bytes_received = 10 + fields_size(&parts.headers);
        // A trailers-only answer (an error before any message) has its status here.
        if let Some(code) = status_in(&parts.headers) {
            out.code = Some(code);
            ex.receiving = t_head.elapsed();
            return;
        }
        if ex.status != 200 {
            out.code = Some(code_of_http_status(ex.status));
            ex.receiving = t_head.elapsed();
            return;
        }
        while let Some(chunk) = next_chunk(&mut body, ex, &slot.conn, tls).await {
            let Ok(chunk) = chunk else { return };
            let now = Instant::now();
            frame.extend_from_slice(&chunk);
            match split_messages(frame, &call, &mut out.messages, &mut on_message, now) {
                Ok(at) => {
                    frame.drain(..at);
                }
                Err(Split::Limited) => {
                    // Enough: dropping the stream cancels it (RST_STREAM CANCEL).
                    out.limited = true;
                    ex.receiving = t_head.elapsed();
                    return;
                }
                Err(Split::Refused(why)) => {
                    ex.error = Some(ErrorKind::Protocol);
                    ex.reason = Some(why);
                    return;
                }
            }
        }
        match body.trailers().await {
            Ok(Some(t)) => {
                ex.bytes_received += fields_size(&t);
                out.code = status_in(&t);
            }
            Ok(None) => {}
            Err(e) => {
                fail(ex, &e, &slot.conn, tls);
                return;
            }
        }
        ex.receiving = t_head.elapsed();
        if out.code.is_none() {
            // gRPC's clients count such a call as INTERNAL (grpc-go: "server
            // closed the stream without sending trailers"); pado names the fault.
            out.code = Some(NO_STATUS_CODE);
            ex.error = Some(ErrorKind::Protocol);
            ex.reason = Some(NO_STATUS);
        } else if !frame.is_empty() {
            ex.error = Some(ErrorKind::Protocol);
            ex.reason = Some("the gRPC response ended inside a message");
        }
    };
    let outcome = tokio::time::timeout_at(deadline.into(), run).await;
    settle(&mut out.exchange, Instant::now(), outcome.is_err());
    out
}

/// Why the reading of a reply's messages stopped early.
enum Split {
    /// `max_messages` were read.
    Limited,
    /// A message pado cannot read: why.
    Refused(&'static str),
}

/// Hands each complete length-prefixed message in `frame` to `on_message`, counting
/// them in `messages`; `Ok` with how many bytes of `frame` they took (the rest is the
/// start of a message still arriving).
#[inline]
fn split_messages(
    frame: &[u8],
    call: &GrpcCall<'_>,
    messages: &mut u64,
    on_message: &mut impl FnMut(&[u8], Instant),
    now: Instant,
) -> Result<usize, Split> {
    let mut at = 0;
    while frame.len() - at >= 5 {
        let compressed = frame[at] != 0;
        let len = u32::from_be_bytes([frame[at + 1], frame[at + 2], frame[at + 3], frame[at + 4]])
            as usize;
        if compressed {
            return Err(Split::Refused(
                "a compressed gRPC message (pado asks for none)",
            ));
        }
        if len > call.max_message {
            return Err(Split::Refused(
                "a gRPC message larger than defaults.max_body",
            ));
        }
        if frame.len() - at - 5 < len {
            break;
        }
        on_message(&frame[at + 5..at + 5 + len], now);
        at += 5 + len;
        *messages += 1;
        if call.max_messages.is_some_and(|m| *messages >= m) {
            return Err(Split::Limited);
        }
    }
    Ok(at)
}

/// gRPC's INTERNAL: the code a call ended without any `grpc-status` stands for, as
/// gRPC's own clients count it (grpc-go reports `codes.Internal`, "server closed the
/// stream without sending trailers"), so such a call never passes as OK.
pub const NO_STATUS_CODE: u16 = 13;

/// The failure reason of a call that ended without any `grpc-status`.
pub const NO_STATUS: &str =
    "the server sent no grpc-status (neither in trailers nor in the head); gRPC counts the call as INTERNAL";

/// The `grpc-status` of a header block, when it has one.
fn status_in(headers: &HeaderMap) -> Option<u16> {
    let v = headers.get("grpc-status")?;
    std::str::from_utf8(v.as_bytes()).ok()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_take_grpc_timeout_form() {
        assert_eq!(grpc_timeout(Duration::from_millis(1500)), "1500m");
        assert_eq!(grpc_timeout(Duration::from_secs(200_000)), "200000S");
    }

    #[test]
    fn a_message_gets_its_length_prefix() {
        let mut out = Vec::new();
        frame_message(b"abc", &mut out);
        assert_eq!(out, [0, 0, 0, 0, 3, b'a', b'b', b'c']);
    }

    #[test]
    fn http_statuses_map_to_grpc_codes() {
        assert_eq!(code_of_http_status(503), 14);
        assert_eq!(code_of_http_status(404), 12);
        assert_eq!(code_of_http_status(401), 16);
        assert_eq!(code_of_http_status(500), 2);
    }

    #[test]
    fn the_status_is_read_from_a_header_block() {
        let mut h = HeaderMap::new();
        assert_eq!(status_in(&h), None);
        h.insert("grpc-status", HeaderValue::from_static("5"));
        assert_eq!(status_in(&h), Some(5));
    }

    #[test]
    fn a_request_carries_grpc_headers_and_metadata() {
        let url = url::Url::parse("http://127.0.0.1:50051/").unwrap();
        let origin = Origin::for_url_with(
            &url,
            crate::Protocol::Http2,
            || crate::tls_client_config(true),
            || crate::tls_client_config_alpn(true, &[b"h2"]),
        )
        .unwrap();
        let r = GrpcRequest::new(
            &origin,
            "/pkg.Svc/Call",
            &[("X-Tag".into(), "a".into())],
            Duration::from_secs(2),
        )
        .unwrap();
        assert_eq!(r.uri.to_string(), "http://127.0.0.1:50051/pkg.Svc/Call");
        assert_eq!(r.headers["content-type"], "application/grpc");
        assert_eq!(r.headers["te"], "trailers");
        assert_eq!(r.headers["grpc-timeout"], "2000m");
        assert_eq!(r.headers["x-tag"], "a");
        assert!(GrpcRequest::new(
            &origin,
            "/a",
            &[("bad name".into(), "x".into())],
            Duration::ZERO
        )
        .is_err());
    }
}
