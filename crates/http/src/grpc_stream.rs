//! A gRPC call held open as a stream (k6's `grpc.Stream`, and a script's unary
//! call when its reply's metadata is wanted): opened on a stream slot of the
//! pool, each request message written when the caller writes it, the half-close
//! when it ends, and the server's head, messages and trailers read one event at a
//! time, so one task can write and read in any order (client, server and
//! bidirectional streams) without blocking its worker.
//!
//! Timed as any HTTP/2 exchange: sending until the head went out, waiting until
//! the response's head, receiving until the trailers.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Method};
use pado_metrics::ErrorKind;

use crate::conn::Origin;
use crate::exchange::{settle, Exchange};
use crate::grpc::{code_of_http_status, frame_message, GrpcRequest, NO_STATUS, NO_STATUS_CODE};
use crate::h2conn::{H2Pool, StreamSlot};
use crate::h2exchange::{fail, fields_size, ready_stream, Ready};

/// Where the reading of the server's side is.
enum Recv {
    /// Its head has not come yet.
    Head(h2::client::ResponseFuture),
    /// Its messages are arriving.
    Body(h2::RecvStream),
    /// It ended (the status was given).
    Done,
}

/// One open gRPC stream.
pub struct GrpcStream {
    slot: StreamSlot,
    send: Option<h2::SendStream<Bytes>>,
    recv: Recv,
    /// Bytes of a message still arriving.
    frame: Vec<u8>,
    max_message: usize,
    tls: bool,
    start: Instant,
    t_sent: Instant,
    t_head: Option<Instant>,
    /// The exchange's phases, bytes and transport failure so far.
    pub exchange: Exchange,
    /// The response head's metadata (lower-case names), once it came.
    pub headers: Vec<(String, String)>,
    /// Messages written.
    pub sent: u64,
    /// Messages read.
    pub received: u64,
}

/// The next thing the server said.
#[derive(Debug, PartialEq, Eq)]
pub enum GrpcStreamEvent {
    /// A reply message (protobuf bytes, without the length prefix).
    Message(Vec<u8>),
    /// The call ended.
    End(GrpcEnd),
}

/// How a call ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GrpcEnd {
    /// The gRPC status; `None` when the call failed in transport.
    pub code: Option<u16>,
    /// The status message (`grpc-message`, percent-decoded), or why the call
    /// failed in transport.
    pub message: String,
    /// The trailers' metadata (lower-case names), without `grpc-status` and
    /// `grpc-message`.
    pub trailers: Vec<(String, String)>,
}

/// Open a call of `request` on `origin`: a stream slot, the head sent, the
/// request body left open for [`GrpcStream::write`]. `Err` with the failed
/// exchange when no stream could be had within `timeout`.
pub async fn open_stream(
    pool: &H2Pool,
    origin: &Origin,
    request: &GrpcRequest,
    timeout: Duration,
    max_message: usize,
) -> Result<GrpcStream, Exchange> {
    let start = Instant::now();
    let mut ex = Exchange::default();
    let closed = "the connection closed before the stream could be opened";
    let ready = tokio::time::timeout(
        timeout,
        ready_stream(pool, origin, timeout, start, &mut ex, closed),
    )
    .await;
    let (slot, ready, t_send) = match ready {
        Ok(Ready::Stream(slot, ready, t_send)) => (slot, ready, t_send),
        Ok(Ready::Http1(_)) => {
            ex.error = Some(ErrorKind::H2NotNegotiated);
            ex.reason = Some("gRPC needs HTTP/2 and the server chose HTTP/1.1");
            settle(&mut ex, Instant::now(), false);
            return Err(ex);
        }
        Ok(Ready::Failed) => {
            settle(&mut ex, Instant::now(), false);
            return Err(ex);
        }
        Err(_) => {
            settle(&mut ex, Instant::now(), true);
            return Err(ex);
        }
    };
    let tls = origin.tls.is_some();
    let sent = ready.and_then(|mut send| {
        let mut r = http::Request::new(());
        *r.method_mut() = Method::POST;
        *r.uri_mut() = request.uri.clone();
        *r.headers_mut() = request.headers.clone();
        send.send_request(r, false)
    });
    let t_sent = Instant::now();
    ex.sending = t_sent - t_send;
    match sent {
        Ok((response, send)) => {
            ex.bytes_sent = request.size;
            Ok(GrpcStream {
                slot,
                send: Some(send),
                recv: Recv::Head(response),
                frame: Vec::new(),
                max_message,
                tls,
                start,
                t_sent,
                t_head: None,
                exchange: ex,
                headers: Vec::new(),
                sent: 0,
                received: 0,
            })
        }
        Err(e) => {
            fail(&mut ex, &e, &slot.conn, tls);
            settle(&mut ex, Instant::now(), false);
            Err(ex)
        }
    }
}

/// The metadata of a header block, without gRPC's own fields.
fn metadata_of(h: &HeaderMap) -> Vec<(String, String)> {
    h.iter()
        .filter(|(n, _)| !matches!(n.as_str(), "grpc-status" | "grpc-message"))
        .map(|(n, v)| {
            (
                n.as_str().to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect()
}

/// gRPC's `grpc-message`, percent-decoded (the spec's encoding), as text.
fn status_message(h: &HeaderMap) -> String {
    let Some(v) = h.get("grpc-message") else {
        return String::new();
    };
    let raw = v.as_bytes();
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if raw[i] == b'%' && i + 2 < raw.len() {
            if let (Some(a), Some(b)) = (hex(raw[i + 1]), hex(raw[i + 2])) {
                out.push((a * 16 + b) as u8);
                i += 3;
                continue;
            }
        }
        out.push(raw[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The `grpc-status` of a header block, when it has one.
fn status_in(h: &HeaderMap) -> Option<u16> {
    std::str::from_utf8(h.get("grpc-status")?.as_bytes())
        .ok()?
        .trim()
        .parse()
        .ok()
}

impl GrpcStream {
    /// Write one request message (protobuf bytes): `Err` with why when the
    /// stream can no longer be written.
    pub fn write(&mut self, message: &[u8]) -> Result<(), String> {
        let send = self
            .send
            .as_mut()
            .ok_or_else(|| "the stream has ended its writing".to_string())?;
        let mut framed = Vec::with_capacity(message.len() + 5);
        frame_message(message, &mut framed);
        let n = framed.len() as u64;
        send.send_data(Bytes::from(framed), false)
            .map_err(|e| format!("the stream cannot be written: {e}"))?;
        self.exchange.bytes_sent += n;
        self.sent += 1;
        Ok(())
    }

    /// End the writing (the half-close); the server's side goes on.
    pub fn end(&mut self) {
        if let Some(mut send) = self.send.take() {
            let _ = send.send_data(Bytes::new(), true);
        }
    }

    /// Whether the call has ended.
    pub fn done(&self) -> bool {
        matches!(self.recv, Recv::Done)
    }

    /// Cancel the call (RST_STREAM) without waiting for the server: what an
    /// iteration or a run cut short does. Its exchange ends now.
    pub fn cancel(&mut self, timed_out: bool) -> GrpcEnd {
        if let Some(mut send) = self.send.take() {
            send.send_reset(h2::Reason::CANCEL);
        }
        self.recv = Recv::Done;
        settle(&mut self.exchange, Instant::now(), timed_out);
        if timed_out {
            self.exchange.reason = Some("the gRPC call's deadline passed");
        }
        GrpcEnd {
            code: timed_out.then_some(4),
            message: if timed_out {
                "context deadline exceeded".into()
            } else {
                "the call was cancelled".into()
            },
            trailers: Vec::new(),
        }
    }

    /// The next message or the end. Safe to drop before it completes (nothing
    /// read is lost: the state stays in the stream), so a task can wait on many
    /// streams at once. After [`GrpcStreamEvent::End`] it gives `End` again.
    pub async fn next(&mut self) -> GrpcStreamEvent {
        loop {
            match self.split() {
                Ok(Some(m)) => return GrpcStreamEvent::Message(m),
                Ok(None) => {}
                Err(why) => return GrpcStreamEvent::End(self.broken(ErrorKind::Protocol, why)),
            }
            match &mut self.recv {
                Recv::Done => return GrpcStreamEvent::End(GrpcEnd::default()),
                Recv::Head(response) => {
                    let response = match response.await {
                        Ok(r) => r,
                        Err(e) => return GrpcStreamEvent::End(self.failed(&e)),
                    };
                    let t_head = Instant::now();
                    self.t_head = Some(t_head);
                    self.exchange.waiting = t_head - self.t_sent;
                    let (parts, body) = response.into_parts();
                    self.exchange.status = parts.status.as_u16();
                    self.exchange.bytes_received = 10 + fields_size(&parts.headers);
                    // A trailers-only answer (an error before any message): its
                    // metadata are trailers, and there are no headers (as gRPC's
                    // own clients show them).
                    if let Some(code) = status_in(&parts.headers) {
                        let message = status_message(&parts.headers);
                        let md = metadata_of(&parts.headers);
                        return GrpcStreamEvent::End(self.ended(Some(code), message, md));
                    }
                    self.headers = metadata_of(&parts.headers);
                    if self.exchange.status != 200 {
                        let code = code_of_http_status(self.exchange.status);
                        let message = format!("HTTP status {}", self.exchange.status);
                        return GrpcStreamEvent::End(self.ended(Some(code), message, Vec::new()));
                    }
                    self.recv = Recv::Body(body);
                }
                Recv::Body(body) => match body.data().await {
                    Some(Ok(chunk)) => {
                        self.exchange.bytes_received += chunk.len() as u64;
                        let _ = body.flow_control().release_capacity(chunk.len());
                        self.frame.extend_from_slice(&chunk);
                    }
                    Some(Err(e)) => return GrpcStreamEvent::End(self.failed(&e)),
                    None => {
                        let trailers = match body.trailers().await {
                            Ok(t) => t.unwrap_or_default(),
                            Err(e) => return GrpcStreamEvent::End(self.failed(&e)),
                        };
                        self.exchange.bytes_received += fields_size(&trailers);
                        let Some(code) = status_in(&trailers) else {
                            let end = self.broken(ErrorKind::Protocol, NO_STATUS);
                            return GrpcStreamEvent::End(GrpcEnd {
                                code: Some(NO_STATUS_CODE),
                                ..end
                            });
                        };
                        if !self.frame.is_empty() {
                            let why = "the gRPC response ended inside a message";
                            return GrpcStreamEvent::End(self.broken(ErrorKind::Protocol, why));
                        }
                        let message = status_message(&trailers);
                        let md = metadata_of(&trailers);
                        return GrpcStreamEvent::End(self.ended(Some(code), message, md));
                    }
                },
            }
        }
    }

    /// A complete message at the front of the buffer, taken out.
    fn split(&mut self) -> Result<Option<Vec<u8>>, &'static str> {
        let f = &self.frame;
        if f.len() < 5 {
            return Ok(None);
        }
        if f[0] != 0 {
            return Err("a compressed gRPC message (pado asks for none)");
        }
        let len = u32::from_be_bytes([f[1], f[2], f[3], f[4]]) as usize;
        if len > self.max_message {
            return Err("a gRPC message larger than defaults.max_body");
        }
        if f.len() - 5 < len {
            return Ok(None);
        }
        let m = f[5..5 + len].to_vec();
        self.frame.drain(..5 + len);
        self.received += 1;
        Ok(Some(m))
    }

    /// The call ended with a status.
    fn ended(
        &mut self,
        code: Option<u16>,
        message: String,
        trailers: Vec<(String, String)>,
    ) -> GrpcEnd {
        self.recv = Recv::Done;
        self.send = None;
        let now = Instant::now();
        if let Some(t) = self.t_head {
            self.exchange.receiving = now - t;
        }
        settle(&mut self.exchange, now, false);
        GrpcEnd {
            code,
            message,
            trailers,
        }
    }

    /// The stream failed in h2.
    fn failed(&mut self, e: &h2::Error) -> GrpcEnd {
        fail(&mut self.exchange, e, &self.slot.conn, self.tls);
        let why = e.to_string();
        let mut end = self.ended(None, String::new(), Vec::new());
        end.message = why;
        end
    }

    /// The server sent what gRPC does not allow.
    fn broken(&mut self, kind: ErrorKind, why: &'static str) -> GrpcEnd {
        if let Some(mut send) = self.send.take() {
            send.send_reset(h2::Reason::PROTOCOL_ERROR);
        }
        self.exchange.error = Some(kind);
        self.exchange.reason = Some(why);
        let mut end = self.ended(None, String::new(), Vec::new());
        end.message = why.to_string();
        end
    }

    /// When the call began (its first instant, as the exchange's start).
    pub fn started(&self) -> Instant {
        self.start
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn the_status_message_is_percent_decoded_and_grpc_fields_are_not_metadata() {
        let mut h = HeaderMap::new();
        h.insert("grpc-status", HeaderValue::from_static("5"));
        h.insert(
            "grpc-message",
            HeaderValue::from_static("no%20such%20user%3A%20%ED%8C%8C%EB%8F%84"),
        );
        h.insert("x-count", HeaderValue::from_static("3"));
        assert_eq!(status_in(&h), Some(5));
        assert_eq!(status_message(&h), "no such user: 파도");
        assert_eq!(metadata_of(&h), [("x-count".to_string(), "3".to_string())]);
        // A lone `%` at the end stays as it is.
        h.insert("grpc-message", HeaderValue::from_static("100%"));
        assert_eq!(status_message(&h), "100%");
    }
}
