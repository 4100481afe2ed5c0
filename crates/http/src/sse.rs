//! Server-Sent Events (`text/event-stream`) parsed as the body streams, following
//! the WHATWG HTML standard's "event stream interpretation" (§9.2.6): lines end with
//! CRLF, LF or CR; a line starting with `:` is a comment; `field: value` with one
//! leading space dropped; `data` lines joined with LF; `event`, `id` (ignored when it
//! holds NUL), `retry` (ASCII digits only); a blank line dispatches the event, and an
//! event with no data is not dispatched; what is left when the stream ends is
//! discarded (here: reported as [`SseParser::pending`], so a cut stream can be
//! counted as one).
//!
//! The parser keeps its lines and fields in buffers it reuses from event to event
//! and stream to stream: once they have grown to the largest event, parsing
//! allocates nothing; an event whose one data line arrived whole in one piece of
//! the body (an LLM's token, as a rule) is handed over from that piece, not copied. What an event means (a token, the end of the stream) is its
//! [`SseHandler`]'s business, so that the client knows nothing of checks or LLMs.

use std::time::{Duration, Instant};

/// One dispatched event, borrowed from the parser's buffers (valid during the
/// handler's call only).
#[derive(Clone, Copy, Debug)]
pub struct SseEvent<'a> {
    /// The event's type (`event:`); `message` when the stream named none.
    pub event: &'a [u8],
    /// Its `data` lines joined with LF (no final LF).
    pub data: &'a [u8],
    /// The last event ID at dispatch (the stream's, which persists across events).
    pub id: &'a [u8],
}

/// What a stream's events mean to whoever reads them: told of each event as it is
/// dispatched, with the instant its bytes were read, it says whether to read on.
pub trait SseHandler {
    /// One event; `false` stops reading the stream (its stop condition was met).
    fn event(&mut self, ev: &SseEvent<'_>, at: Instant) -> bool;
}

/// A stream to parse during an exchange: the VU's reused parser, what handles its
/// events, and the longest it is read (a stream read for `max_time` ends then as a
/// success, not a timeout).
pub struct SseStream<'a> {
    /// The parser (reset by the exchange before the body).
    pub parser: &'a mut SseParser,
    /// Who is told of each event.
    pub handler: &'a mut dyn SseHandler,
    /// Stop reading this long after the request was sent.
    pub max_time: Option<Duration>,
    /// Read the body by a task of its own (`tokio::task::spawn_local`: set it only
    /// when the exchange runs inside a `LocalSet`, as a load worker's VUs do): each
    /// piece of the stream then wakes that small task, not the caller's whole
    /// chain of futures ([`crate::own_task`]). HTTP/1.1 only: an HTTP/2 stream is
    /// read by its caller as before.
    pub own_task: bool,
}

/// The event-stream parser's state: the partial line, and the fields of the event
/// being built.
#[derive(Debug, Default)]
pub struct SseParser {
    /// A line begun in an earlier piece of the body.
    line: Vec<u8>,
    /// `data` lines so far, each followed by LF.
    data: Vec<u8>,
    /// The event type buffer.
    event: Vec<u8>,
    /// The last event ID buffer (kept across events, as the standard says).
    last_id: Vec<u8>,
    /// The last `retry` (ms) the stream set, if any.
    retry: Option<u64>,
    /// The previous piece ended with CR: an LF starting this one belongs to it.
    after_cr: bool,
    /// Whether the stream's first bytes (a UTF-8 BOM to skip) are still ahead.
    at_start: bool,
    /// A field line was seen since the last blank line.
    fields_seen: bool,
    /// The handler asked to stop.
    stopped: bool,
    /// Events dispatched on this stream.
    events: u64,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

impl SseParser {
    /// A parser ready for a stream.
    pub fn new() -> Self {
        SseParser {
            at_start: true,
            ..Default::default()
        }
    }

    /// Ready for a new stream, keeping the buffers' memory.
    pub fn reset(&mut self) {
        self.line.clear();
        self.data.clear();
        self.event.clear();
        self.last_id.clear();
        self.retry = None;
        self.after_cr = false;
        self.at_start = true;
        self.fields_seen = false;
        self.stopped = false;
        self.events = 0;
    }

    /// The reconnection time (ms) the stream last set with a valid `retry`.
    pub fn retry(&self) -> Option<u64> {
        self.retry
    }

    /// Events dispatched since [`SseParser::reset`].
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Whether the handler stopped the stream.
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// Whether an event was begun and not finished: a partial line, or fields
    /// without the blank line that dispatches them. A stream that ends so was cut
    /// mid-event.
    pub fn pending(&self) -> bool {
        !self.line.is_empty() || self.fields_seen
    }

    /// Parses the next piece of the body, read at `at`; returns `false` once the
    /// handler has stopped the stream (the rest of the piece is not parsed).
    pub fn feed(&mut self, mut bytes: &[u8], at: Instant, h: &mut dyn SseHandler) -> bool {
        if self.stopped {
            return false;
        }
        if bytes.is_empty() {
            // Nothing to parse, and a CR that ended the last piece still waits
            // for an LF that may start the next.
            return true;
        }
        if self.at_start {
            // The BOM may arrive split; wait for enough bytes to tell.
            self.line.extend_from_slice(bytes);
            if self.line.len() < BOM.len() && BOM.starts_with(&self.line) {
                return true;
            }
            self.at_start = false;
            let mut first = std::mem::take(&mut self.line);
            let skip = if first.starts_with(BOM) { BOM.len() } else { 0 };
            let go = self.feed_lines(&first[skip..], at, h);
            first.clear();
            // The partial line the first piece left is in `self.line` again;
            // the taken buffer's memory is kept when it was not.
            if self.line.is_empty() {
                self.line = first;
            }
            return go;
        }
        if self.after_cr {
            self.after_cr = false;
            if let Some(rest) = bytes.strip_prefix(b"\n") {
                bytes = rest;
            }
        }
        self.feed_lines(bytes, at, h)
    }

    fn feed_lines(&mut self, mut bytes: &[u8], at: Instant, h: &mut dyn SseHandler) -> bool {
        // The event's one data line so far, where it lies in `bytes` (copied into
        // `self.data` only when a second data line joins it or the piece ends first).
        let mut lent: Option<&[u8]> = None;
        while let Some(i) = memchr::memchr2(b'\n', b'\r', bytes) {
            let (line, end) = (&bytes[..i], bytes[i]);
            let mut next = i + 1;
            if end == b'\r' {
                match bytes.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            let go = if self.line.is_empty() {
                self.process(line, &mut lent, at, h)
            } else {
                let mut whole = std::mem::take(&mut self.line);
                whole.extend_from_slice(line);
                // A line begun in an earlier piece is copied, not lent (it is
                // never blank: nothing is dispatched from it).
                self.keep_lent(&mut lent);
                let mut copied = None;
                let go = self.process(&whole, &mut copied, at, h);
                self.keep_lent(&mut copied);
                whole.clear();
                self.line = whole;
                go
            };
            bytes = &bytes[next..];
            if !go {
                self.stopped = true;
                return false;
            }
        }
        self.keep_lent(&mut lent);
        self.line.extend_from_slice(bytes);
        true
    }

    /// Copies a data line lent from the piece into the event's data.
    #[inline]
    fn keep_lent(&mut self, lent: &mut Option<&[u8]>) {
        if let Some(v) = lent.take() {
            self.data.extend_from_slice(v);
            self.data.push(b'\n');
        }
    }

    /// One complete line; `lent` holds the event's data when its one data line so
    /// far lies in the piece being parsed.
    fn process<'b>(
        &mut self,
        line: &'b [u8],
        lent: &mut Option<&'b [u8]>,
        at: Instant,
        h: &mut dyn SseHandler,
    ) -> bool {
        if line.is_empty() {
            return self.dispatch(lent.take(), at, h);
        }
        if line[0] == b':' {
            return true;
        }
        self.fields_seen = true;
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(c) => {
                let v = &line[c + 1..];
                (&line[..c], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"event" => {
                self.event.clear();
                self.event.extend_from_slice(value);
            }
            // The event's first data line is lent, not copied: most events
            // (an LLM's tokens) have one.
            b"data" if self.data.is_empty() && lent.is_none() => *lent = Some(value),
            b"data" => {
                self.keep_lent(lent);
                self.data.extend_from_slice(value);
                self.data.push(b'\n');
            }
            b"id" if !value.contains(&0) => {
                self.last_id.clear();
                self.last_id.extend_from_slice(value);
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                self.retry = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
            }
            _ => {}
        }
        true
    }

    /// A blank line: the event built so far is dispatched when it has data (`lent`:
    /// its one data line, still in the piece).
    fn dispatch(&mut self, lent: Option<&[u8]>, at: Instant, h: &mut dyn SseHandler) -> bool {
        self.fields_seen = false;
        let data: &[u8] = match lent {
            Some(d) => d,
            None if self.data.is_empty() => {
                self.event.clear();
                return true;
            }
            None => {
                self.data.pop();
                &self.data
            }
        };
        let ev = SseEvent {
            event: if self.event.is_empty() {
                b"message"
            } else {
                &self.event
            },
            data,
            id: &self.last_id,
        };
        self.events += 1;
        let go = h.event(&ev, at);
        self.data.clear();
        self.event.clear();
        go
    }
}

#[cfg(test)]
mod tests;
