//! One HTTP/1.1 request/response exchange on a VU's connection: pre-built request
//! bytes out, the response framed in the connection's reused buffer, every phase timed.
//! Nothing here allocates per request unless the response body must be kept for a
//! check (then into the VU's reused body buffer).

use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use pado_metrics::{ErrorKind, HttpVersion, NewConnection};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::conn::{connect, io_error_kind, Conn, Origin, SetupTimes, READ_BUF};
use crate::decode::BodyDecoder;
use crate::response::{parse_head, BodyKind, ChunkedDecoder, Head, ProtocolError, MAX_HEAD};
use crate::status::StatusSet;

/// How long a connection may sit idle before it is checked for a server-side close
/// prior to reuse. Busy connections are never checked (no extra syscall on the hot path).
const IDLE_CHECK_AFTER: Duration = Duration::from_millis(50);
/// Largest read buffer a connection grows to while streaming a large body.
const MAX_READ_BUF: usize = 64 * 1024;

/// What one exchange produced.
#[derive(Clone, Copy, Debug, Default)]
pub struct Exchange {
    /// Status code (0 on transport failure before a head).
    pub status: u16,
    /// Transport failure.
    pub error: Option<ErrorKind>,
    /// Why, in a few words, when the category alone does not say (a TLS handshake
    /// failure: unknown issuer, wrong host name, expired...).
    pub reason: Option<&'static str>,
    /// HTTP/2: waiting for a stream slot, or for the connection another VU was
    /// opening (zero for HTTP/1.1, whose VU owns its connection).
    pub blocked: Duration,
    /// Setup (zero on a reused connection).
    pub setup: SetupTimes,
    /// Writing the request.
    pub sending: Duration,
    /// Last byte written to first byte read.
    pub waiting: Duration,
    /// First byte to last byte.
    pub receiving: Duration,
    /// When the request started to be written (after connection setup).
    pub sent_at: Option<Instant>,
    /// When the exchange ended (success or failure).
    pub end: Option<Instant>,
    /// Bytes written.
    pub bytes_sent: u64,
    /// Bytes read.
    pub bytes_received: u64,
    /// The request was sent again on a fresh connection because the reused one had
    /// been closed by the server before answering (see [`exchange`]).
    pub reconnected: bool,
    /// The kept body was longer than its cap and holds only the first cap bytes.
    pub body_cut: bool,
    /// An encoded response (`Content-Encoding` gzip, br, zstd, deflate): its body's
    /// bytes as received (after chunked framing) and decoded. Zero otherwise.
    pub body_encoded: u64,
    /// See [`Exchange::body_encoded`].
    pub body_decoded: u64,
    /// The HTTP version of the connection the request went on; `None` when it
    /// reached none (no connection could be made): what the run counts by version.
    pub version: Option<HttpVersion>,
    /// Whether this exchange opened the connection it went on (TCP, and TLS over
    /// https): what the run counts as connections opened.
    pub opened: NewConnection,
}

/// A status whose `Location` a client follows (the VU's redirect loop does; the
/// exchange keeps such a response's head for it). Inline: the VU asks per response,
/// from the engine's crate.
#[inline]
pub fn is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

/// Methods that are idempotent (RFC 9110 §9.2.2): sending one twice has the effect of
/// sending it once, so a request that may or may not have reached the server can be
/// sent again.
#[inline]
pub fn idempotent_method(method: &str) -> bool {
    matches!(
        method,
        "GET" | "HEAD" | "OPTIONS" | "TRACE" | "PUT" | "DELETE"
    )
}

/// What to send and how to read the answer.
pub struct RequestRef<'a> {
    /// Request bytes, head and body.
    pub bytes: &'a [u8],
    /// A HEAD request (its response has no body whatever the headers say).
    pub is_head: bool,
    /// May be sent again on a fresh connection if a reused one proves closed before
    /// any byte of the answer ([`exchange`]); true for idempotent requests.
    pub resend_safe: bool,
    /// Deadline for the whole exchange, connection setup included.
    pub timeout: Duration,
    /// Where to keep the (de-chunked) body, when a check needs it, and its size cap
    /// (a longer body is cut to it and [`Exchange::body_cut`] says so).
    pub keep_body: Option<(&'a mut Vec<u8>, usize)>,
    /// Where to copy the final response head: always when `.1` is true (header
    /// checks and extraction), otherwise only when it sets a cookie (the jar) or is
    /// a redirect (its `Location`).
    pub keep_head: Option<(&'a mut Vec<u8>, bool)>,
    /// Where to keep the first [`pado_metrics::failure::BODY_PREFIX`] bytes of the
    /// body when the status is *not* in the set (a failure to sample) and the body is
    /// not kept anyway: a response with an expected status copies nothing.
    pub failed_prefix: Option<(&'a mut Vec<u8>, &'a StatusSet)>,
    /// The VU's decoder for encoded responses; `None` leaves bodies as sent.
    pub decoder: Option<&'a mut crate::decode::BodyDecoder>,
    /// An `sse:` step's event stream: a 2xx body is parsed as it streams, each
    /// event handed over with the instant it was read (see [`crate::sse`]).
    pub sse: Option<crate::sse::SseStream<'a>>,
}

/// Run one exchange, opening a connection in `slot` when there is none (or the idle
/// one was closed by the server). On failure, or when the response says so, the
/// connection is dropped so the next request reconnects.
///
/// **A reused connection the server had already closed.** A server may close a
/// kept-alive connection after a response without saying `Connection: close` (or its
/// idle timeout may fire as the next request goes out). The request then meets EOF or
/// a reset before any byte of an answer, or a broken pipe on write. That is the
/// connection's end, not the request's failure: when `resend_safe` is set (idempotent
/// requests, as Go's net/http and browsers resend), the request is sent once more on a
/// new connection, within the same timeout, and [`Exchange::reconnected`] says so. The
/// time lost on the dead connection and the new connect are reported as `connecting`;
/// sending, waiting and receiving are those of the request that was answered. A request
/// that is not safe to resend (e.g. a POST without `Idempotency-Key`: the server may
/// have acted on it) keeps its `reset`. Only a failure on a *reused* connection with
/// nothing received qualifies, so a server that resets fresh connections, or answers
/// in part, is still counted as failing.
pub async fn exchange(slot: &mut Option<Conn>, origin: &Origin, req: RequestRef<'_>) -> Exchange {
    let mut ex = Exchange::default();
    exchange_into(slot, origin, req, &mut ex).await;
    ex
}

/// [`exchange`], its figures written into `ex` (reset first) rather than returned:
/// a VU keeps one [`Exchange`] per request in place and reads it there, so the ~200
/// bytes are not moved out of the exchange's future and through each caller's.
pub async fn exchange_into(
    slot: &mut Option<Conn>,
    origin: &Origin,
    req: RequestRef<'_>,
    ex: &mut Exchange,
) {
    let start = Instant::now();
    let deadline = start + req.timeout;
    *ex = Exchange::default();
    if let Some(c) = slot.as_ref() {
        // Idle time as of `start`: one clock read per request, not two.
        if start.saturating_duration_since(c.idle_since) >= IDLE_CHECK_AFTER
            && c.stream.looks_closed()
        {
            *slot = None;
        }
    }
    let mut reused = slot.is_some();
    // On a kept connection the request goes out now: the clock read that started
    // the exchange starts its sending too (one read per request less).
    let mut send_from = Some(start);
    let tls = origin.tls.is_some();
    // An event stream read for `max_time` ends then, as a success.
    let sse_end = req.sse.as_ref().and_then(|s| s.max_time).map(|t| start + t);
    let mut sink = BodySink::new(req.keep_body, req.keep_head, req.failed_prefix, req.decoder);
    sink.sse = req.sse;
    loop {
        if slot.is_none() {
            send_from = None;
            let budget = deadline.saturating_duration_since(Instant::now());
            let t_connect = Instant::now();
            // Boxed: a connect (TCP, TLS handshake) is a large future but happens once
            // per connection; inline, it would make every request's future bigger, and
            // the future is moved on every call.
            match Box::pin(connect(origin, budget)).await {
                Ok((c, t)) => {
                    if ex.reconnected {
                        // The dead connection's attempt counts as setup too.
                        ex.setup.connecting += t_connect - ex.sent_at.unwrap_or(t_connect);
                        ex.setup.connecting += t.connecting;
                        ex.setup.dns += t.dns;
                        ex.setup.tls = t.tls;
                        ex.sent_at = None;
                    } else {
                        ex.setup = t;
                    }
                    ex.opened = NewConnection::opened(tls);
                    *slot = Some(c);
                }
                Err(e) => {
                    ex.reason = e.reason;
                    ex.error = Some(e.kind);
                    ex.end = Some(Instant::now());
                    return;
                }
            }
        }
        let Some(conn) = slot.as_mut() else {
            ex.error = Some(ErrorKind::Io);
            return;
        };
        ex.version = Some(HttpVersion::Http1);
        sink.clear();
        // The deadline's timer is armed once and read on every later wake-up (a
        // streamed body wakes the task once per piece: see [`crate::deadline`]).
        let outcome = crate::deadline::within(
            sse_end.map_or(deadline, |e| e.min(deadline)),
            run(
                conn,
                req.bytes,
                req.is_head,
                tls,
                ex,
                &mut sink,
                send_from.take(),
            ),
        )
        .await;
        let end = match ex.end {
            Some(last) => last,
            None => Instant::now(),
        };
        ex.end = Some(end);
        let reuse = match outcome {
            Err(_) if sse_end.is_some_and(|e| e < deadline) && ex.status != 0 => {
                // The stream was read for as long as asked: its answer, not a timeout.
                finish_phases(ex, end);
                false
            }
            Err(_) => {
                ex.error = Some(ErrorKind::Timeout);
                finish_phases(ex, end);
                false
            }
            Ok(Err(ErrorKind::Reset))
                if reused && req.resend_safe && !ex.reconnected && ex.bytes_received == 0 =>
            {
                // The server had closed the kept-alive connection: once more, fresh.
                *slot = None;
                reused = false;
                ex.reconnected = true;
                ex.end = None;
                ex.sending = Duration::ZERO;
                ex.waiting = Duration::ZERO;
                ex.receiving = Duration::ZERO;
                continue;
            }
            Ok(Err(kind)) => {
                ex.error = Some(kind);
                finish_phases(ex, end);
                false
            }
            Ok(Ok(reuse)) => reuse,
        };
        if reuse {
            conn.idle_since = end;
        } else {
            *slot = None;
        }
        sink.cut_to_cap(ex);
        return;
    }
}

/// Where the parts of a response that checks, the cookie jar and failure samples
/// need go, over HTTP/1.1 and HTTP/2 alike (see [`RequestRef`]).
pub(crate) struct BodySink<'k> {
    /// The kept body and its cap, one byte beyond the caller's (see [`BodySink::new`]).
    pub(crate) keep_body: Option<(&'k mut Vec<u8>, usize)>,
    pub(crate) keep_head: Option<(&'k mut Vec<u8>, bool)>,
    pub(crate) failed_prefix: Option<(&'k mut Vec<u8>, &'k StatusSet)>,
    pub(crate) decoder: Option<&'k mut BodyDecoder>,
    /// An event stream to parse.
    pub(crate) sse: Option<crate::sse::SseStream<'k>>,
}

impl<'k> BodySink<'k> {
    /// The sink of a request's buffers. One byte beyond the body's cap is kept, so a
    /// body longer than the cap can be told from one of exactly its size; it is cut
    /// back to the cap at the end ([`BodySink::cut_to_cap`]).
    #[inline]
    pub(crate) fn new(
        keep_body: Option<(&'k mut Vec<u8>, usize)>,
        keep_head: Option<(&'k mut Vec<u8>, bool)>,
        failed_prefix: Option<(&'k mut Vec<u8>, &'k StatusSet)>,
        decoder: Option<&'k mut BodyDecoder>,
    ) -> Self {
        BodySink {
            keep_body: keep_body.map(|(b, cap)| (b, cap.saturating_add(1))),
            keep_head,
            failed_prefix,
            decoder,
            sse: None,
        }
    }

    /// Empties the kept body and head before an attempt.
    #[inline]
    pub(crate) fn clear(&mut self) {
        if let Some((b, _)) = self.keep_body.as_mut() {
            b.clear();
        }
        if let Some((h, _)) = self.keep_head.as_mut() {
            h.clear();
        }
        if let Some(s) = self.sse.as_mut() {
            s.parser.reset();
        }
    }

    /// A response whose status is not in the expected set is a failure: when its
    /// body is not kept anyway, its first bytes go into the failure sample (only
    /// failures pay this copy).
    #[inline]
    pub(crate) fn keep_failure_prefix(&mut self, status: u16) {
        if self.keep_body.is_none()
            && self
                .failed_prefix
                .as_ref()
                .is_some_and(|(_, ok)| !ok.contains(status))
        {
            if let Some((b, _)) = self.failed_prefix.take() {
                b.clear();
                self.keep_body = Some((b, pado_metrics::failure::BODY_PREFIX));
            }
        }
    }

    /// Cuts a body longer than the cap back to it, saying so in `ex`.
    #[inline]
    pub(crate) fn cut_to_cap(&mut self, ex: &mut Exchange) {
        if let Some((b, cap)) = self.keep_body.as_mut() {
            if b.len() >= *cap {
                b.truncate(*cap - 1);
                ex.body_cut = true;
            }
        }
    }
}

/// Ends the decoding of an encoded body: its encoded and decoded sizes, or a
/// `decode` failure saying why (the body as received stays counted).
#[inline]
pub(crate) fn end_decoding(
    d: &mut BodyDecoder,
    keep_body: &mut Option<(&mut Vec<u8>, usize)>,
    ex: &mut Exchange,
) {
    match d.end(keep_body.as_mut().map(|k| &mut *k.0)) {
        Ok(sizes) => {
            ex.body_encoded = sizes.encoded;
            ex.body_decoded = sizes.decoded;
        }
        Err(fault) => {
            ex.error = Some(ErrorKind::Decode);
            ex.reason = Some(fault.reason());
        }
    }
}

/// Closes an HTTP/2 exchange at `end`: a deadline that passed is a `timeout`, and a
/// failed exchange's time so far goes to the phase that was running.
#[inline]
pub(crate) fn settle(ex: &mut Exchange, end: Instant, timed_out: bool) {
    ex.end = Some(end);
    if timed_out {
        ex.error = Some(ErrorKind::Timeout);
    }
    if ex.error.is_some() {
        finish_phases(ex, end);
    }
}

/// On failure, attribute the time so far to the phase that was running.
pub(crate) fn finish_phases(ex: &mut Exchange, end: Instant) {
    if let Some(sent_at) = ex.sent_at {
        let spent = end - sent_at;
        let known = ex.sending + ex.waiting + ex.receiving;
        if spent > known {
            if ex.waiting.is_zero() && ex.receiving.is_zero() && ex.status == 0 {
                ex.waiting = spent - ex.sending;
            } else {
                ex.receiving += spent - known;
            }
        }
    }
}

/// Writes the request and reads its response; `Ok(reuse)` says whether the
/// connection may carry another request. `t_send` is when the request starts to go
/// out, when the caller has just read the clock (otherwise it is read here).
async fn run(
    conn: &mut Conn,
    bytes: &[u8],
    is_head: bool,
    tls: bool,
    ex: &mut Exchange,
    sink: &mut BodySink<'_>,
    t_send: Option<Instant>,
) -> Result<bool, ErrorKind> {
    let t_send = t_send.unwrap_or_else(Instant::now);
    ex.sent_at = Some(t_send);
    let mut write_failed = conn.stream.write_all(bytes).await.err();
    if tls && write_failed.is_none() {
        write_failed = conn.stream.flush().await.err();
    }
    let t_sent = Instant::now();
    ex.sending = t_sent - t_send;
    if write_failed.is_none() {
        // Added: a request sent again after a dead connection went out twice.
        ex.bytes_sent += bytes.len() as u64;
    }
    let read = read_response(conn, is_head, tls, t_sent, ex, sink).await;
    match write_failed {
        None => read,
        // The write failed. A server refusing an upload (413) often answers as soon
        // as it has the head and closes without reading the body: the answer is then
        // already here, and it is what happened (curl and browsers show it too).
        // Whatever is readable is read; only a complete response (head, and body if
        // framed) counts, and the connection is not reused. Otherwise the write's
        // error stands.
        Some(e) => read.map(|_| false).map_err(|_| io_error_kind(&e, tls)),
    }
}

/// Reads and frames the response to a request written (or partly written) at
/// `t_sent`; `Ok(reuse)` says whether the connection may carry another request.
async fn read_response(
    conn: &mut Conn,
    is_head: bool,
    tls: bool,
    t_sent: Instant,
    ex: &mut Exchange,
    sink: &mut BodySink<'_>,
) -> Result<bool, ErrorKind> {
    // The head, read here and not in a future of its own: its ~100 bytes are
    // not moved out of one on every request.
    let buf = &mut conn.buf;
    buf.clear();
    let mut first_byte: Option<Instant> = None;
    let head = loop {
        if buf.len() == buf.capacity() {
            if buf.len() > MAX_HEAD {
                return Err(ErrorKind::TooLarge);
            }
            buf.reserve(READ_BUF);
        }
        let n = conn
            .stream
            .read_buf(buf)
            .await
            .map_err(|e| io_error_kind(&e, tls))?;
        if n == 0 {
            // The server closed before a complete head: reset for the user.
            return Err(ErrorKind::Reset);
        }
        ex.bytes_received += n as u64;
        if first_byte.is_none() {
            let now = Instant::now();
            first_byte = Some(now);
            ex.waiting = now - t_sent;
        }
        match parse_head(buf, is_head) {
            Ok(Some(h)) => break h,
            Ok(None) => continue,
            Err(ProtocolError::HeadTooLarge(_) | ProtocolError::TooManyHeaders) => {
                return Err(ErrorKind::TooLarge)
            }
            Err(_) => return Err(ErrorKind::Protocol),
        }
    };
    let fb = first_byte.unwrap_or(t_sent);
    ex.status = head.status;
    if let Some((out, always)) = sink.keep_head.as_mut() {
        if *always || head.has_set_cookie || is_redirect(head.status) {
            out.extend_from_slice(&buf[head.start..head.len]);
        }
    }
    sink.keep_failure_prefix(head.status);
    let keep_body = &mut sink.keep_body;
    // An encoded body is decoded as it streams (only then is the decoder touched).
    let mut dec = match (head.coding, sink.decoder.as_deref_mut()) {
        (Some(c), Some(d)) if head.body != BodyKind::None => {
            d.begin(c, keep_body.as_ref().map_or(0, |k| k.1));
            Some(d)
        }
        _ => None,
    };
    // An event stream is parsed when the answer is one (2xx, not encoded).
    let mut sse = sink
        .sse
        .as_mut()
        .filter(|_| (200..300).contains(&head.status) && dec.is_none());
    // A stream its caller asked to have read by a task of its own (see
    // [`crate::own_task`]).
    let own_task = sse.as_ref().is_some_and(|s| s.own_task);
    let mut keep = |bytes: &[u8]| {
        match dec.as_mut() {
            Some(d) => d.feed(bytes),
            None => keep(keep_body, bytes),
        }
        sse.as_mut()
            .is_none_or(|s| s.parser.feed(bytes, Instant::now(), &mut *s.handler))
    };

    let read = if own_task {
        crate::own_task::run(read_body(conn, &head, ex, tls, &mut keep)).await
    } else {
        read_body(conn, &head, ex, tls, &mut keep).await
    };
    let reuse = match sse.as_ref() {
        None => read?,
        // Cut mid-event, or before the stop condition: its own category.
        Some(s) if s.parser.stopped() => read.unwrap_or(false),
        Some(_) if matches!(read, Err(ErrorKind::Reset)) => return Err(ErrorKind::SseTruncated),
        Some(s) if read.is_ok() && s.parser.pending() => return Err(ErrorKind::SseTruncated),
        Some(_) => read?,
    };
    if let Some(d) = dec {
        // The framing was read to its end: the connection stays usable either way.
        end_decoding(d, keep_body, ex);
    }
    // The answer's last byte ends its receiving and the exchange: one clock read
    // for both ([`exchange_into`] reads the clock itself only when no answer came).
    let last = Instant::now();
    ex.receiving = last.saturating_duration_since(fb);
    ex.end = Some(last);
    // Keep the buffer small again after a large body.
    let buf = &mut conn.buf;
    if buf.capacity() > 4 * READ_BUF {
        buf.clear();
        buf.shrink_to(READ_BUF);
    }
    Ok(reuse)
}

/// Reads the body as the head frames it, handing every body byte to `keep`, until
/// `keep` says to stop (then the rest is left unread and the connection dropped);
/// `Ok(reuse)` says whether the connection may carry another request.
#[inline]
async fn read_body<F: FnMut(&[u8]) -> bool>(
    conn: &mut Conn,
    head: &Head,
    ex: &mut Exchange,
    tls: bool,
    keep: &mut F,
) -> Result<bool, ErrorKind> {
    let buf = &mut conn.buf;
    let reuse = head.keep_alive;
    let leftover = buf.len() - head.len;
    // Set when `keep` asked to stop: the body's rest is not read.
    let stop = std::cell::Cell::new(false);
    let mut keep = |b: &[u8]| {
        if !stop.get() && !keep(b) {
            stop.set(true);
        }
    };
    let pieces = Pieces {
        stream: &mut conn.stream,
        ex,
        tls,
        stop: &stop,
    };
    match head.body {
        // Unsolicited bytes: do not trust the connection.
        BodyKind::None => Ok(reuse && leftover == 0),
        BodyKind::Length(total) => {
            let first = (leftover as u64).min(total) as usize;
            keep(&buf[head.len..head.len + first]);
            let reuse = reuse && leftover as u64 <= total;
            let mut left = total - first as u64;
            if left == 0 {
                return Ok(reuse);
            }
            let rest = pieces.read(buf, Some(left), false, |piece| {
                if piece.is_empty() {
                    return Err(ErrorKind::Reset);
                }
                let take = (piece.len() as u64).min(left) as usize;
                keep(&piece[..take]);
                left -= take as u64;
                Ok(match left {
                    0 => Piece::Done {
                        reuse: piece.len() == take,
                    },
                    _ => Piece::More(Some(left)),
                })
            });
            Ok(rest.await? && reuse)
        }
        BodyKind::Chunked => {
            let mut dec = ChunkedDecoder::new();
            let used = dec
                .feed(&buf[head.len..], &mut keep)
                .map_err(|_| ErrorKind::Protocol)?;
            if dec.is_done() {
                return Ok(reuse && head.len + used == buf.len());
            }
            let rest = pieces.read(buf, None, false, |piece| {
                if piece.is_empty() {
                    return Err(ErrorKind::Reset);
                }
                let used = dec
                    .feed(piece, &mut keep)
                    .map_err(|_| ErrorKind::Protocol)?;
                Ok(if dec.is_done() {
                    Piece::Done {
                        reuse: used == piece.len(),
                    }
                } else {
                    Piece::More(None)
                })
            });
            Ok(rest.await? && reuse)
        }
        BodyKind::UntilClose => {
            keep(&buf[head.len..]);
            let rest = pieces.read(buf, None, true, |piece| {
                if piece.is_empty() {
                    return Ok(Piece::Done { reuse: false });
                }
                keep(piece);
                Ok(Piece::More(None))
            });
            rest.await.map(|_| false)
        }
    }
}

/// What a body's framing made of a piece just read.
enum Piece {
    /// More of the body is to come: how much, when the framing knows (otherwise
    /// the bytes received so far stand for it when the buffer is sized).
    More(Option<u64>),
    /// The body ended in this piece; `reuse` when nothing followed it.
    Done {
        /// Nothing after the body in the piece.
        reuse: bool,
    },
}

/// What reading a body's later pieces needs besides the buffer and the framing.
struct Pieces<'a> {
    stream: &'a mut crate::conn::Stream,
    ex: &'a mut Exchange,
    tls: bool,
    /// Set once the body's reader asked to stop: the rest is not read.
    stop: &'a std::cell::Cell<bool>,
}

impl<'a> Pieces<'a> {
    /// Reads the body's later pieces into the (cleared) connection buffer, growing
    /// it up to [`MAX_READ_BUF`] when much is still to come, counts their bytes and
    /// hands each to `frame` (an empty piece: the peer closed), until `frame` says
    /// the body ended (`Ok(reuse)`) or the reader stopped (`Ok(false)`). With
    /// `end_on_tls_reset`, a TLS peer that closes without close_notify ends the
    /// body (an empty piece) rather than failing it.
    ///
    /// One poll function, not a read future inside a loop inside the exchange's:
    /// a streamed body (an LLM's tokens) wakes its task once per piece, and every
    /// level of futures resumed on a wake-up is a state read from the VU's future
    /// (a cache miss each, with a thousand streams on a core).
    fn read<F>(
        self,
        buf: &'a mut Vec<u8>,
        mut expected: Option<u64>,
        end_on_tls_reset: bool,
        mut frame: F,
    ) -> impl std::future::Future<Output = Result<bool, ErrorKind>> + 'a
    where
        F: FnMut(&[u8]) -> Result<Piece, ErrorKind> + 'a,
    {
        let Pieces {
            stream,
            ex,
            tls,
            stop,
        } = self;
        std::future::poll_fn(move |cx| loop {
            if stop.get() {
                return Poll::Ready(Ok(false));
            }
            buf.clear();
            let hint = expected.unwrap_or(ex.bytes_received);
            if buf.capacity() < MAX_READ_BUF && hint > 16 * 1024 {
                buf.reserve((hint as usize).min(MAX_READ_BUF));
            }
            let read = tokio_util::io::poll_read_buf(Pin::new(&mut *stream), cx, buf);
            let n = match std::task::ready!(read) {
                Ok(n) => n,
                Err(e) => match io_error_kind(&e, tls) {
                    ErrorKind::Reset if tls && end_on_tls_reset => 0,
                    kind => return Poll::Ready(Err(kind)),
                },
            };
            ex.bytes_received += n as u64;
            match frame(&buf[..n]) {
                Ok(Piece::More(e)) => expected = e,
                Ok(Piece::Done { reuse }) => return Poll::Ready(Ok(reuse)),
                Err(kind) => return Poll::Ready(Err(kind)),
            }
        })
    }
}

#[inline]
pub(crate) fn keep(keep_body: &mut Option<(&mut Vec<u8>, usize)>, bytes: &[u8]) {
    if let Some((out, cap)) = keep_body.as_mut() {
        let room = cap.saturating_sub(out.len());
        out.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use super::*;

    const ANSWER: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
    const REQUEST: &[u8] = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

    /// A loopback server that answers `n` requests on one kept-alive connection
    /// with [`ANSWER`], then closes; every read bounded in time.
    fn answer_n(n: usize) -> (url::Url, std::thread::JoinHandle<()>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = url::Url::parse(&format!("http://{}/", listener.local_addr().unwrap())).unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut got = Vec::new();
            for _ in 0..n {
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    let mut b = [0u8; 512];
                    let k = s.read(&mut b).unwrap();
                    assert!(k > 0, "the client closed before its request");
                    got.extend_from_slice(&b[..k]);
                }
                got.clear();
                s.write_all(ANSWER).unwrap();
            }
        });
        (url, server)
    }

    /// A loopback server that answers one request with `answer`, written in
    /// pieces of `piece` bytes 2 ms apart (each its own read on the client, as a
    /// streamed body's are), then keeps the connection open for a while.
    fn answer_in_pieces(answer: Vec<u8>, piece: usize) -> (url::Url, std::thread::JoinHandle<()>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = url::Url::parse(&format!("http://{}/", listener.local_addr().unwrap())).unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            s.set_nodelay(true).unwrap();
            let mut got = Vec::new();
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                let mut b = [0u8; 512];
                let k = s.read(&mut b).unwrap();
                assert!(k > 0, "the client closed before its request");
                got.extend_from_slice(&b[..k]);
            }
            for p in answer.chunks(piece) {
                if s.write_all(p).is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            std::thread::sleep(Duration::from_millis(50));
        });
        (url, server)
    }

    /// A body that arrives in many pieces, framed by length, by chunks or by the
    /// connection's close, is kept whole and its bytes counted; the connection is
    /// kept when the framing says where the body ended (length, chunks), not
    /// when only the close did.
    #[test]
    fn a_body_read_piece_by_piece_is_kept_whole_under_every_framing() {
        let cases: [(&[u8], bool); 3] = [
            (b"HTTP/1.1 200 OK\r\nContent-Length: 26\r\n\r\nabcdefghijklmnopqrstuvwxyz", true),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabcde\r\n15\r\nfghijklmnopqrstuvwxyz\r\n0\r\n\r\n",
                true,
            ),
            (b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nabcdefghijklmnopqrstuvwxyz", false),
        ];
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        for (i, (answer, kept)) in cases.into_iter().enumerate() {
            for piece in [1, 3, 7] {
                let why = format!("case {i}, pieces of {piece}");
                let (url, server) = answer_in_pieces(answer.to_vec(), piece);
                let origin = Origin::for_url(&url, || crate::tls_client_config(false)).unwrap();
                let mut slot = None;
                let mut body = Vec::new();
                let req = RequestRef {
                    bytes: REQUEST,
                    is_head: false,
                    resend_safe: true,
                    timeout: Duration::from_secs(5),
                    keep_body: Some((&mut body, 100)),
                    keep_head: None,
                    failed_prefix: None,
                    decoder: None,
                    sse: None,
                };
                let ex = rt.block_on(exchange(&mut slot, &origin, req));
                assert_eq!((ex.status, ex.error), (200, None), "{why}: {ex:?}");
                assert_eq!(body, b"abcdefghijklmnopqrstuvwxyz", "{why}");
                assert_eq!(ex.bytes_received, answer.len() as u64, "{why}");
                assert_eq!(slot.is_some(), kept, "{why}: connection kept");
                drop(slot);
                server.join().unwrap();
            }
        }
    }

    /// What a failed, reconnected, cut exchange leaves behind.
    fn stale() -> Exchange {
        Exchange {
            status: 503,
            error: Some(ErrorKind::Timeout),
            reason: Some("stale"),
            blocked: Duration::from_secs(1),
            setup: SetupTimes {
                dns: Duration::from_secs(1),
                connecting: Duration::from_secs(1),
                tls: Duration::from_secs(1),
            },
            sending: Duration::from_secs(9),
            waiting: Duration::from_secs(9),
            receiving: Duration::from_secs(9),
            sent_at: None,
            end: None,
            bytes_sent: 999,
            bytes_received: 999,
            reconnected: true,
            body_cut: true,
            body_encoded: 7,
            body_decoded: 70,
            version: None,
            opened: NewConnection::Tls,
        }
    }

    /// An answered exchange ends at its answer's last byte: its phases (sending,
    /// waiting, receiving) from the moment the request went out add up to its end
    /// exactly, so a request's duration is the sum of its phases, as k6 reports
    /// `http_req_duration`. (The end is the clock read that closes `receiving`,
    /// not a later one.)
    #[test]
    fn an_answered_exchange_ends_where_its_phases_do() {
        let (url, server) = answer_n(3);
        let origin = Origin::for_url(&url, || crate::tls_client_config(false)).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut slot = None;
        for i in 0..3 {
            let req = RequestRef {
                bytes: REQUEST,
                is_head: false,
                resend_safe: true,
                timeout: Duration::from_secs(5),
                keep_body: None,
                keep_head: None,
                failed_prefix: None,
                decoder: None,
                sse: None,
            };
            let ex = rt.block_on(exchange(&mut slot, &origin, req));
            assert_eq!((ex.status, ex.error), (200, None), "request {i}: {ex:?}");
            let sent = ex.sent_at.expect("an answered request went out");
            let phases = ex.sending + ex.waiting + ex.receiving;
            assert_eq!(ex.end, Some(sent + phases), "request {i}: {ex:?}");
        }
        server.join().unwrap();
    }

    /// The VU writes every request's exchange into the same [`Exchange`]: nothing of
    /// the one before (a failure, a reconnect, a cut body, setup times) may remain,
    /// on a new connection or a kept one.
    #[test]
    fn exchange_into_leaves_nothing_of_the_exchange_before() {
        let (url, server) = answer_n(2);
        let origin = Origin::for_url(&url, || crate::tls_client_config(false)).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut slot = None;
        let mut body = Vec::new();
        for (i, opened) in [NewConnection::Plain, NewConnection::No]
            .into_iter()
            .enumerate()
        {
            let mut ex = stale();
            let req = RequestRef {
                bytes: REQUEST,
                is_head: false,
                resend_safe: true,
                timeout: Duration::from_secs(5),
                keep_body: Some((&mut body, 100)),
                keep_head: None,
                failed_prefix: None,
                decoder: None,
                sse: None,
            };
            rt.block_on(exchange_into(&mut slot, &origin, req, &mut ex));
            let why = format!("request {i}: {ex:?}");
            assert_eq!(ex.status, 200, "{why}");
            assert_eq!((ex.error, ex.reason), (None, None), "{why}");
            assert_eq!(ex.blocked, Duration::ZERO, "{why}");
            assert!(ex.sending < Duration::from_secs(5), "{why}");
            assert!(ex.waiting < Duration::from_secs(5), "{why}");
            assert!(ex.receiving < Duration::from_secs(5), "{why}");
            assert!(ex.sent_at.is_some() && ex.end.is_some(), "{why}");
            assert_eq!(ex.bytes_sent, REQUEST.len() as u64, "{why}");
            assert_eq!(ex.bytes_received, ANSWER.len() as u64, "{why}");
            assert!(!ex.reconnected && !ex.body_cut, "{why}");
            assert_eq!((ex.body_encoded, ex.body_decoded), (0, 0), "{why}");
            assert_eq!(ex.version, Some(HttpVersion::Http1), "{why}");
            assert_eq!(ex.opened, opened, "{why}");
            if opened == NewConnection::No {
                // A kept connection: no setup at all.
                let s = ex.setup;
                assert_eq!((s.dns, s.connecting, s.tls), Default::default(), "{why}");
            } else {
                assert!(ex.setup.connecting < Duration::from_secs(1), "{why}");
                assert_eq!(ex.setup.tls, Duration::ZERO, "{why}");
            }
            assert_eq!(body, b"hello", "{why}");
            assert!(slot.is_some(), "{why}: the connection is kept");
        }
        server.join().unwrap();
    }
}
