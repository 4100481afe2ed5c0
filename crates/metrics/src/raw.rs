//! Raw per-request records (`--output raw-json=FILE`, `raw-csv=FILE`): the hand-over
//! from the load workers to the one thread that formats and writes them.
//!
//! The per-second histograms stay the run's measurements; a raw record is a copy of
//! one request's sample for people who want every line (as k6's `--out json`). So
//! that asking for it never slows the load, a worker never waits for the writer:
//! each worker fills a [`RawBatch`] of fixed-size [`RawRecord`]s (their text — the
//! scenario, method, URL and tags — appended to the batch's one byte buffer) and hands
//! a full batch, or what it has each second, to a bounded channel with `try_send`.
//! When the channel is full (the writer fell behind) the batch's records are dropped
//! and counted ([`RawStream::dropped`]). Emptied batches come back through a second
//! channel, so a run in its steady state allocates nothing per request.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender, TrySendError};

use crate::{ErrorKind, Phases};

/// Records per batch: a worker hands its batch over when it holds this many (and
/// once a second whatever it holds), so the writer sees records about as they come.
pub const BATCH_RECORDS: usize = 1024;

/// Text bytes per batch: a batch is handed over once its text passes this too
/// (long URLs), keeping every span's offset small and each batch's memory bounded.
pub const BATCH_TEXT: usize = 1 << 20;

/// Batches waiting for the writer before more are dropped: with [`BATCH_RECORDS`],
/// about 64 Ki requests (a few MiB) of slack for a writer that pauses.
pub const QUEUED_BATCHES: usize = 64;

/// A range of a batch's text buffer (offset and length in bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Span {
    start: u32,
    len: u32,
}

/// Which protocol a record's request spoke.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RawProtocol {
    /// HTTP/1.1.
    #[default]
    Http1,
    /// HTTP/2.
    Http2,
    /// A gRPC call (over HTTP/2): its status is the gRPC code.
    Grpc,
}

impl RawProtocol {
    /// How the raw file names it (`1.1`, `2`, `grpc`).
    pub fn as_str(self) -> &'static str {
        match self {
            RawProtocol::Http1 => "1.1",
            RawProtocol::Http2 => "2",
            RawProtocol::Grpc => "grpc",
        }
    }
}

/// One request as a raw line will show it. Fixed size: its text lives in the
/// batch's buffer ([`RawBatch::text`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawRecord {
    /// When the response ended (or the request failed), µs since the Unix epoch (UTC).
    pub at_us: u64,
    /// The step's series (index into the plan's series: the step's name).
    pub step: u32,
    /// The VU (1-based; 0 for the global setup and teardown).
    pub vu: u64,
    /// The VU's iteration (0-based).
    pub iter: u64,
    /// Status code (the gRPC code for a gRPC call; 0 when no response came).
    pub status: u16,
    /// The transport failure, if any.
    pub error: Option<ErrorKind>,
    /// Whether the request counted as failed.
    pub failed: bool,
    /// Whether it failed only by a check.
    pub failed_by_check: bool,
    /// HTTP version or gRPC.
    pub protocol: RawProtocol,
    /// Bytes written (head and body).
    pub bytes_sent: u64,
    /// Bytes read (head and body, as on the wire).
    pub bytes_received: u64,
    /// The timing phases, in µs.
    pub phases: Phases,
    /// The scenario (or `setup`/`teardown`).
    pub scenario: Span,
    /// The method (`GET`..., or `GRPC`).
    pub method: Span,
    /// The URL as sent (the writer masks secrets in it).
    pub url: Span,
    /// Tags as `name 0x1e value` pairs, each ended by 0x1f; empty without tags.
    pub tags: Span,
    /// An LLM stream's own figures (`sse: {llm: true}` steps); `None` for every
    /// other request, whose line then has no LLM fields.
    pub llm: Option<RawLlm>,
}

/// One LLM stream's figures on its raw line: what `llm_ttft`, `llm_tpot`,
/// `llm_output_tokens` and `llm_input_tokens` took from it, so a user can plot a
/// request's time to first token against its prompt's length.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawLlm {
    /// From the request's start to its first token (µs); `None` without a token.
    pub ttft_us: Option<u64>,
    /// Time per output token after the first (µs); `None` under two tokens.
    pub tpot_us: Option<u64>,
    /// Output tokens (the server's `usage` count when it sent one).
    pub output_tokens: u64,
    /// The prompt's tokens as pado sized and sent it (`sse.prompt`); `None`
    /// when the prompt was sent as written.
    pub input_tokens: Option<u64>,
}

/// A worker's records and their text, handed to the writer as one.
#[derive(Debug, Default)]
pub struct RawBatch {
    /// The records.
    pub records: Vec<RawRecord>,
    /// The text the records' spans point into.
    pub text: Vec<u8>,
}

impl RawBatch {
    /// An empty batch with room for [`BATCH_RECORDS`] records.
    pub fn with_capacity() -> RawBatch {
        RawBatch {
            records: Vec::with_capacity(BATCH_RECORDS),
            text: Vec::with_capacity(BATCH_RECORDS * 64),
        }
    }

    /// Append `parts` to the text as one span.
    pub fn push_text(&mut self, parts: &[&[u8]]) -> Span {
        let start = self.text.len();
        for p in parts {
            self.text.extend_from_slice(p);
        }
        Span {
            start: start as u32,
            len: (self.text.len() - start) as u32,
        }
    }

    /// The text appended since offset `start` (bytes pushed straight into
    /// [`RawBatch::text`]) as one span.
    pub fn span_since(&self, start: usize) -> Span {
        let start = start.min(self.text.len());
        Span {
            start: start as u32,
            len: (self.text.len() - start) as u32,
        }
    }

    /// The bytes of `span`.
    pub fn get(&self, span: Span) -> &[u8] {
        let start = span.start as usize;
        self.text
            .get(start..start + span.len as usize)
            .unwrap_or_default()
    }

    /// Empty it, keeping its memory.
    pub fn clear(&mut self) {
        self.records.clear();
        self.text.clear();
    }
}

/// The engine's end of the raw channel: cloned into every worker's [`RawTap`].
#[derive(Clone, Debug)]
pub struct RawLink {
    tx: Sender<RawBatch>,
    spare: Receiver<RawBatch>,
    dropped: Arc<AtomicU64>,
}

/// The writer's end: batches to write, the way to give emptied ones back, and the
/// drop counter the workers add to.
#[derive(Debug)]
pub struct RawStream {
    /// Batches in the order workers handed them over.
    pub rx: Receiver<RawBatch>,
    spare: Sender<RawBatch>,
    dropped: Arc<AtomicU64>,
}

impl RawStream {
    /// Give an emptied batch back for a worker to fill again (dropped if enough
    /// are waiting already).
    pub fn recycle(&self, mut b: RawBatch) {
        b.clear();
        let _ = self.spare.try_send(b);
    }

    /// Records the workers dropped because the writer had not taken earlier ones.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// The drop counter itself, to read after the stream is gone.
    pub fn drop_counter(&self) -> Arc<AtomicU64> {
        self.dropped.clone()
    }
}

/// A raw channel holding at most `queued` full batches.
pub fn raw_channel(queued: usize) -> (RawLink, RawStream) {
    let (tx, rx) = crossbeam_channel::bounded(queued.max(1));
    let (spare_tx, spare_rx) = crossbeam_channel::bounded(queued.max(1) + 8);
    let dropped = Arc::new(AtomicU64::new(0));
    (
        RawLink {
            tx,
            spare: spare_rx,
            dropped: dropped.clone(),
        },
        RawStream {
            rx,
            spare: spare_tx,
            dropped,
        },
    )
}

/// One worker's batch being filled. Single-threaded: the worker owns it.
#[derive(Debug)]
pub struct RawTap {
    link: RawLink,
    batch: RawBatch,
}

impl RawTap {
    /// A tap on `link` (its first batch is allocated here, before the load).
    pub fn new(link: RawLink) -> RawTap {
        RawTap {
            link,
            batch: RawBatch::with_capacity(),
        }
    }

    /// The batch being filled: push the record's text here, then [`RawTap::push`].
    pub fn batch(&mut self) -> &mut RawBatch {
        &mut self.batch
    }

    /// Add a record; a full batch is handed over.
    #[inline]
    pub fn push(&mut self, r: RawRecord) {
        self.batch.records.push(r);
        if self.batch.records.len() >= BATCH_RECORDS || self.batch.text.len() >= BATCH_TEXT {
            self.flush();
        }
    }

    /// Hand the batch to the writer without waiting: if the writer has
    /// [`QUEUED_BATCHES`] waiting already, its records are dropped and counted.
    pub fn flush(&mut self) {
        if self.batch.records.is_empty() {
            self.batch.text.clear();
            return;
        }
        let n = self.batch.records.len() as u64;
        let full = std::mem::take(&mut self.batch);
        match self.link.tx.try_send(full) {
            Ok(()) => {
                self.batch = self
                    .link
                    .spare
                    .try_recv()
                    .unwrap_or_else(|_| RawBatch::with_capacity());
            }
            Err(TrySendError::Full(mut b) | TrySendError::Disconnected(mut b)) => {
                self.link.dropped.fetch_add(n, Ordering::Relaxed);
                b.clear();
                self.batch = b;
            }
        }
    }
}

impl Drop for RawTap {
    fn drop(&mut self) {
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(batch: &mut RawBatch, i: u64) -> RawRecord {
        RawRecord {
            at_us: i,
            url: batch.push_text(&[b"http://127.0.0.1/", i.to_string().as_bytes()]),
            ..RawRecord::default()
        }
    }

    #[test]
    fn a_writer_that_cannot_keep_up_loses_counted_records_and_the_worker_never_waits() {
        // A queue of 2 batches that nobody reads: the third full batch and every
        // one after it are dropped, and each of their records counted.
        let (link, stream) = raw_channel(2);
        let mut tap = RawTap::new(link);
        let total = BATCH_RECORDS as u64 * 5 + 7;
        let started = std::time::Instant::now();
        for i in 0..total {
            let r = record(tap.batch(), i);
            tap.push(r);
        }
        tap.flush();
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        let mut delivered = 0u64;
        let mut first = Vec::new();
        while let Ok(b) = stream.rx.try_recv() {
            delivered += b.records.len() as u64;
            first.push(b);
        }
        assert_eq!(delivered, 2 * BATCH_RECORDS as u64);
        assert_eq!(stream.dropped(), total - delivered);
        // What arrived is whole: the first batch's records are 0.. with their URLs.
        let b = &first[0];
        assert_eq!(b.records[5].at_us, 5);
        assert_eq!(b.get(b.records[5].url), b"http://127.0.0.1/5");
    }

    #[test]
    fn a_writer_that_keeps_up_loses_nothing_and_batches_are_reused() {
        let (link, stream) = raw_channel(2);
        let mut tap = RawTap::new(link);
        let total = BATCH_RECORDS as u64 * 4 + 3;
        let mut seen = 0u64;
        for i in 0..total {
            let r = record(tap.batch(), i);
            tap.push(r);
            while let Ok(b) = stream.rx.try_recv() {
                for (k, r) in b.records.iter().enumerate() {
                    assert_eq!(r.at_us, seen + k as u64);
                }
                seen += b.records.len() as u64;
                stream.recycle(b);
            }
        }
        drop(tap);
        while let Ok(b) = stream.rx.try_recv() {
            seen += b.records.len() as u64;
        }
        assert_eq!(seen, total);
        assert_eq!(stream.dropped(), 0);
    }
}
