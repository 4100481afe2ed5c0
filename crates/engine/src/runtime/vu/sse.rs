//! An `sse:` step's stream as the VU reads it: each event judged against the stop
//! conditions and, for an LLM stream, its token found (JSONPath on the event's
//! data) and timed; at the end, the stream's figures ([`pado_metrics::SseStream`])
//! and the gaps between its tokens. Everything lives in the VU's reused
//! [`SseRead`]: an event costs the parse of its data and, for an LLM stream, the
//! token's text (the only allocation, as an extraction's value).

use std::sync::Arc;
use std::time::Instant;

use pado_http::sse::{SseEvent, SseHandler, SseParser};
use pado_metrics::SseStream;

use crate::plan::SsePlan;
use crate::response_view::ResponseView;

use super::us;

/// The VU's reused state for reading event streams.
#[derive(Debug, Default)]
pub(super) struct SseRead {
    /// The event-stream parser (its buffers kept).
    pub(super) parser: SseParser,
    /// What the events of the current stream came to.
    pub(super) tally: SseTally,
}

/// What one stream's events came to so far.
#[derive(Debug, Default)]
pub(super) struct SseTally {
    /// The stream's plan (set when the request goes out).
    plan: Option<Arc<SsePlan>>,
    /// Events seen (for `count`).
    events: u64,
    /// Events that carried a token.
    tokens: u64,
    /// The server's own count of output tokens, when it sent one.
    usage: Option<u64>,
    /// When the first and the last token arrived.
    first: Option<Instant>,
    last: Option<Instant>,
    /// Gaps between two tokens (µs), in order; emptied, not freed, per stream.
    pub(super) gaps: Vec<u64>,
}

impl SseTally {
    /// Ready for a stream read as `plan` says.
    pub(super) fn begin(&mut self, plan: &Arc<SsePlan>) {
        self.plan = Some(Arc::clone(plan));
        self.events = 0;
        self.tokens = 0;
        self.usage = None;
        self.first = None;
        self.last = None;
        self.gaps.clear();
    }

    /// The stream's figures, `events` dispatched, from `sent` (the request's start)
    /// to `end`.
    pub(super) fn stream(&self, events: u64, sent: Instant, end: Instant) -> SseStream {
        let llm = self.plan.as_ref().is_some_and(|p| p.llm.is_some());
        SseStream {
            events,
            llm,
            tokens: if llm {
                self.usage.unwrap_or(self.tokens)
            } else {
                0
            },
            ttft_us: self
                .first
                .filter(|_| llm)
                .map(|f| us(f.saturating_duration_since(sent))),
            decode_us: match (self.first, self.last) {
                (Some(f), Some(l)) if llm => us(l.saturating_duration_since(f)),
                _ => 0,
            },
            duration_us: us(end.saturating_duration_since(sent)),
        }
    }

    /// Looks for the token in an LLM event's data.
    fn token(&mut self, data: &[u8], at: Instant) {
        let Some(llm) = self.plan.as_ref().and_then(|p| p.llm.as_ref()) else {
            return;
        };
        let view = ResponseView::new(200, &[], data);
        let has_token = llm.token.iter().find_map(|q| {
            q.first(&view)
                .and_then(|v| v.as_str().map(|t| !t.is_empty()))
        });
        if has_token == Some(true) {
            if let Some(last) = self.last {
                self.gaps.push(us(at.saturating_duration_since(last)));
            }
            self.first.get_or_insert(at);
            self.last = Some(at);
            self.tokens += 1;
        }
        // Only the event that carries `usage` pays its look-up.
        if memchr::memmem::find(data, b"usage").is_some() {
            if let Some(n) = llm.usage.first(&view).and_then(|v| v.as_u64()) {
                self.usage = Some(n);
            }
        }
    }
}

impl SseHandler for SseTally {
    fn event(&mut self, ev: &SseEvent<'_>, at: Instant) -> bool {
        self.events += 1;
        let Some(plan) = self.plan.as_deref() else {
            return true;
        };
        if plan.until.as_deref() == Some(ev.data) || plan.until_event.as_deref() == Some(ev.event) {
            return false;
        }
        let last = plan.count.is_some_and(|c| self.events >= c);
        self.token(ev.data, at);
        !last
    }
}
