//! An `sse:` step's stream as the VU reads it: each event judged against the stop
//! conditions and, for an LLM stream, its token found (JSONPath on the event's
//! data) and timed; at the end, the stream's figures ([`pado_metrics::SseStream`])
//! and the gaps between its tokens; the checks on events (one bit per check that
//! an event failed) and the values extracted from them. Everything lives in the
//! VU's reused [`SseRead`]: an LLM event's token and count of tokens cost one walk
//! of its data that builds nothing ([`PathSet`]); checks and extractions parse it
//! (once, shared by them), and nothing else is allocated per event but an
//! extracted value that is not a string (its JSON text).

use std::sync::Arc;
use std::time::Instant;

use pado_http::sse::{SseEvent, SseHandler, SseParser};
use pado_metrics::SseStream;

use crate::json_query::path_set::{LastRead, Leaf, PathSet, MAX_PATHS};
use crate::plan::{EventTest, ExtractSource, LlmPlan, SsePlan};
use crate::response_view::ResponseView;

use super::us;

/// The VU's reused state for reading event streams.
#[derive(Debug, Default)]
pub(super) struct SseRead {
    /// The event-stream parser (its buffers kept).
    pub(super) parser: SseParser,
    /// What the events of the current stream came to.
    pub(super) tally: SseTally,
    /// The user's prompt as rendered, before it is fitted (`sse.prompt.text`).
    pub(super) prompt_src: Vec<u8>,
    /// The prompt fitted to its length.
    pub(super) prompt: String,
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
    /// The checks on events some event failed: bit `i` for the plan's check `i`.
    pub(super) checks_failed: u64,
    /// Per extraction of the plan: whether an event gave a value, and the value
    /// (its buffer kept from stream to stream).
    pub(super) extracted: Vec<(bool, Vec<u8>)>,
    /// The first event a check on events failed on: its place in the stream and
    /// the plan's check it failed; its type, id and first bytes of data in
    /// `failed_event` (copied only on a failure, buffers kept).
    pub(super) failed_at: Option<(u64, usize)>,
    /// See [`SseTally::failed_at`].
    pub(super) failed_event: FailedEventBufs,
    /// The input tokens of the request's prompt, when pado sized it
    /// (`sse.prompt`); set before the request is built, so kept by `begin`.
    pub(super) input_tokens: Option<u64>,
    /// The last event the LLM paths scanned: the next, its token aside the
    /// same bytes as a rule, is answered from it.
    last_read: LastRead,
}

/// The type, id and first data bytes of the event a check on events failed on.
#[derive(Debug, Default)]
pub(super) struct FailedEventBufs {
    pub(super) event: Vec<u8>,
    pub(super) id: Vec<u8>,
    pub(super) data: Vec<u8>,
}

/// Bytes of a failed event's data kept for its sample: the sample shows
/// [`pado_metrics::failure::EVENT_DATA_PREFIX`] of them, and the rest is a margin
/// for the redaction of a secret that straddles the cut.
const FAILED_DATA_KEPT: usize = 16 * 1024;

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
        self.checks_failed = 0;
        self.failed_at = None;
        self.last_read.clear();
        if self.extracted.len() < plan.extract.len() {
            self.extracted
                .resize_with(plan.extract.len(), Default::default);
        }
        for x in &mut self.extracted {
            x.0 = false;
        }
    }

    /// Whether the plan's check on events `i` held for every event.
    pub(super) fn check_held(&self, i: usize) -> bool {
        self.checks_failed & (1u64 << i) == 0
    }

    /// The value extraction `i` took from the stream's events, if any.
    pub(super) fn extracted(&self, i: usize) -> Option<&[u8]> {
        self.extracted
            .get(i)
            .filter(|x| x.0)
            .map(|x| x.1.as_slice())
    }

    /// Judges one event (not the stop event) against the checks on events and
    /// takes the extractions' values from it.
    fn judge(&mut self, plan: &SsePlan, ev: &SseEvent<'_>, view: &ResponseView<'_>) {
        for (i, c) in plan.checks.iter().enumerate() {
            let bit = 1u64 << i;
            if self.checks_failed & bit != 0 {
                continue;
            }
            let ok = match &c.test {
                EventTest::NoEvent(names) => !names.iter().any(|n| **n == *ev.event),
                _ if c.event.as_deref().is_some_and(|e| e != ev.event) => true,
                EventTest::JsonValid => view.json().is_some(),
                EventTest::Data(check) => {
                    super::judged::evaluate(check, view, true, std::time::Duration::ZERO).1
                }
            };
            if !ok {
                self.checks_failed |= bit;
                if self.failed_at.is_none() {
                    self.note_failed(i, ev);
                }
            }
        }
        for (x, (set, buf)) in plan.extract.iter().zip(&mut self.extracted) {
            if (*set && !x.last) || x.event.as_deref().is_some_and(|e| e != ev.event) {
                continue;
            }
            let got = match &x.source {
                ExtractSource::Json(path) => path.first(view).map(|v| match &*v {
                    serde_json::Value::String(s) => write(buf, s.as_bytes()),
                    other => write(buf, other.to_string().as_bytes()),
                }),
                ExtractSource::Regex(re) => re
                    .captures(view.body)
                    .and_then(|c| c.get(1).or_else(|| c.get(0)))
                    .map(|m| write(buf, m.as_bytes())),
                // Refused for events when the plan is built.
                ExtractSource::Header(_) | ExtractSource::Cookie(_) => None,
            };
            *set |= got.is_some();
        }
    }

    /// Keeps the event that failed the plan's check on events `check` (the
    /// stream's first such event): its place, type, id and first data bytes.
    #[cold]
    fn note_failed(&mut self, check: usize, ev: &SseEvent<'_>) {
        self.failed_at = Some((self.events.saturating_sub(1), check));
        let b = &mut self.failed_event;
        write(&mut b.event, ev.event);
        write(&mut b.id, ev.id);
        write(&mut b.data, &ev.data[..ev.data.len().min(FAILED_DATA_KEPT)]);
    }

    /// The event a check on events failed on, if one did: its place in the
    /// stream, the plan's check, and its type, id and first data bytes.
    pub(super) fn failed_event(&self) -> Option<(u64, usize, &FailedEventBufs)> {
        self.failed_at.map(|(i, c)| (i, c, &self.failed_event))
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

    /// Looks for the token and the server's count of tokens in an LLM event's
    /// data.
    fn token(&mut self, llm: &LlmPlan, view: &ResponseView<'_>, at: Instant) {
        let (has_token, usage) = match &llm.one_walk {
            Some(set) => token_in_one_walk(set, llm.token.len(), view.body, &mut self.last_read),
            None => token_by_queries(llm, view),
        };
        if has_token == Some(true) {
            if let Some(last) = self.last {
                self.gaps.push(us(at.saturating_duration_since(last)));
            }
            self.first.get_or_insert(at);
            self.last = Some(at);
            self.tokens += 1;
        }
        if usage.is_some() {
            self.usage = usage;
        }
    }
}

/// An event's token and count of tokens from one walk of its data (`set`: the
/// `tokens` token paths, then the count's): whether the first token path that
/// holds a string holds a non-empty one (`None`: none holds a string), and the
/// count when it is a non-negative integer. Builds nothing; an event that is the
/// last one scanned but for its token is not scanned again (`last`).
fn token_in_one_walk(
    set: &PathSet,
    tokens: usize,
    data: &[u8],
    last: &mut LastRead,
) -> (Option<bool>, Option<u64>) {
    let mut at = [Leaf::Missing; MAX_PATHS];
    set.read_after(data, &mut at, last);
    let text = at[..tokens].iter().find_map(|l| match l {
        Leaf::Str { empty } => Some(!empty),
        _ => None,
    });
    let usage = match at[tokens] {
        Leaf::U64(n) => Some(n),
        _ => None,
    };
    (text, usage)
}

/// The same from the general queries, for paths [`PathSet`] does not take
/// (wildcards, filters...): each token path asked in turn, and the count only of
/// an event whose data names `usage`.
fn token_by_queries(llm: &LlmPlan, view: &ResponseView<'_>) -> (Option<bool>, Option<u64>) {
    let text = llm.token.iter().find_map(|q| {
        q.first(view)
            .and_then(|v| v.as_str().map(|t| !t.is_empty()))
    });
    let usage = if memchr::memmem::find(view.body, b"usage").is_some() {
        llm.usage.first(view).and_then(|v| v.as_u64())
    } else {
        None
    };
    (text, usage)
}

/// `value` into `buf`, its allocation kept.
fn write(buf: &mut Vec<u8>, value: &[u8]) {
    buf.clear();
    buf.extend_from_slice(value);
}

impl SseTally {
    /// One event of a stream read as `plan` says: whether to read on.
    fn on_event(&mut self, plan: &SsePlan, ev: &SseEvent<'_>, at: Instant) -> bool {
        if plan.until.as_deref() == Some(ev.data) || plan.until_event.as_deref() == Some(ev.event) {
            return false;
        }
        let last = plan.count.is_some_and(|c| self.events >= c);
        // One view per event: its data parsed at most once, by whichever reads it
        // first.
        let view = ResponseView::new(200, &[], ev.data);
        if let Some(llm) = &plan.llm {
            self.token(llm, &view, at);
        }
        if !plan.checks.is_empty() || !plan.extract.is_empty() {
            self.judge(plan, ev, &view);
        }
        !last
    }
}

impl SseHandler for SseTally {
    fn event(&mut self, ev: &SseEvent<'_>, at: Instant) -> bool {
        self.events += 1;
        // Taken out and put back (no count of the `Arc` touched per event).
        let Some(plan) = self.plan.take() else {
            return true;
        };
        let go = self.on_event(&plan, ev, at);
        self.plan = Some(plan);
        go
    }
}

impl super::Vu {
    /// Sizes the prompt of `step`'s next request (`sse.prompt`): its length drawn,
    /// the user's prompt rendered and fitted (or a synthetic one made), the
    /// result put in the prompt's variable for the request to render, and its
    /// tokens kept for `llm_input_tokens`. Buffers are reused from request to
    /// request.
    pub(super) fn size_prompt(&mut self, scope: &str, series: u32, pr: &crate::prompt::PromptPlan) {
        let mut rng = pr.rng(self.id, self.iter, series);
        let tokens = pr.length.draw(&mut rng);
        let mut src = std::mem::take(&mut self.resp.sse.prompt_src);
        src.clear();
        if let Some(t) = &pr.text {
            let plan = &self.ctx.plan;
            let mut rc = render_ctx!(self, plan, scope);
            // Raw text has no shaped holes (types bind only in JSON bodies): this
            // cannot fail.
            let _ = rc.render(t, &mut src);
        }
        let text = String::from_utf8_lossy(&src);
        let out = &mut self.resp.sse.prompt;
        crate::prompt::fill(&text, tokens, &mut rng, out);
        drop(text);
        self.resp.sse.prompt_src = src;
        let mut value = self.vars[pr.var].take().unwrap_or_default();
        value.clear();
        value.extend_from_slice(self.resp.sse.prompt.as_bytes());
        self.vars[pr.var] = Some(value);
        self.resp.sse.tally.input_tokens = Some(tokens);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::json_query::JsonQuery;

    /// An OpenAI-style stream: the role event, `tokens` (each a data line, one
    /// event), the finish event, the `usage` event when `usage` is set, `[DONE]`.
    fn stream(tokens: &[&str], usage: Option<u64>) -> String {
        let ev = |delta: &str| {
            format!(
                "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":null}}]}}\n\n"
            )
        };
        let mut s = ev(r#"{"role":"assistant","content":""}"#);
        for t in tokens {
            s += &ev(&format!(r#"{{"content":{t}}}"#));
        }
        s += &ev("{}");
        if let Some(n) = usage {
            s += &format!(
                "data: {{\"id\":\"c\",\"choices\":[],\"usage\":{{\"prompt_tokens\":5,\"completion_tokens\":{n}}}}}\n\n"
            );
        }
        s + "data: [DONE]\n\n"
    }

    fn plan(one_walk: bool) -> Arc<SsePlan> {
        let q = |p: &str| JsonQuery::parse(p).unwrap();
        let mut llm = LlmPlan::new(
            vec![q("$.choices[0].delta.content"), q("$.choices[0].text")],
            q("$.usage.completion_tokens"),
        );
        assert!(llm.one_walk.is_some(), "OpenAI's paths are simple");
        if !one_walk {
            llm.one_walk = None;
        }
        Arc::new(SsePlan {
            until: Some(b"[DONE]"[..].into()),
            until_event: None,
            count: None,
            max_time: None,
            llm: Some(llm),
            checks: Vec::new(),
            checks_fail_request: true,
            extract: Vec::new(),
            prompt: None,
        })
    }

    /// The stream fed in one piece per event, each read 1 ms after the last:
    /// (events, tokens counted, first-to-last token in µs, gaps).
    fn read(body: &str, one_walk: bool) -> (u64, SseStream, Vec<u64>) {
        let mut tally = SseTally::default();
        tally.begin(&plan(one_walk));
        let mut parser = SseParser::new();
        let t0 = Instant::now();
        for (i, piece) in body.split_inclusive("\n\n").enumerate() {
            let at = t0 + Duration::from_millis(1 + i as u64);
            if !parser.feed(piece.as_bytes(), at, &mut tally) {
                break;
            }
        }
        assert!(parser.stopped(), "[DONE] stops the stream");
        let s = tally.stream(parser.events(), t0, t0 + Duration::from_secs(1));
        (parser.events(), s, tally.gaps.clone())
    }

    #[test]
    fn tokens_with_escapes_and_hangul_count_once_each_and_empty_ones_not() {
        let tokens = [
            r#"" 파도""#,
            r#""\"quoted\"""#,
            r#""\uD55C""#,
            r#""""#,
            r#""a \"content\": b""#,
            "null",
            r#""\n""#,
        ];
        for one_walk in [true, false] {
            let (events, s, gaps) = read(&stream(&tokens, None), one_walk);
            // Role, 7 deltas, finish, [DONE].
            assert_eq!(events, 10, "one_walk {one_walk}");
            // The empty and the null content are no tokens.
            assert_eq!(s.tokens, 5, "one_walk {one_walk}");
            // The first token is the 2nd event (read at 2 ms), the last the 8th.
            assert_eq!(s.ttft_us, Some(2_000), "one_walk {one_walk}");
            assert_eq!(s.decode_us, 6_000, "one_walk {one_walk}");
            assert_eq!(
                gaps,
                vec![1_000, 1_000, 2_000, 2_000],
                "one_walk {one_walk}"
            );
        }
    }

    #[test]
    fn the_servers_usage_count_replaces_the_count_of_token_events() {
        for one_walk in [true, false] {
            let (_, s, _) = read(&stream(&[r#""a""#, r#""b""#], Some(32)), one_walk);
            assert_eq!(s.tokens, 32, "one_walk {one_walk}");
            let (_, s, _) = read(&stream(&[r#""a""#, r#""b""#], None), one_walk);
            assert_eq!(s.tokens, 2, "one_walk {one_walk}");
        }
    }
}
