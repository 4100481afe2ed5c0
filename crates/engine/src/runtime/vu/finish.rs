//! The one end of every request, whatever carried it (HTTP/1.1, HTTP/2, gRPC; a
//! redirect hop; a request its templates could not build): checks judged, values
//! extracted, at most a few failure samples per category, the debug trace, the
//! measurement and the raw record, in that order. Each protocol says what its
//! exchange ended with ([`Ended`]) and nothing else; what a failure or a trace
//! shows of it is built here, only when needed, so the success path pays the
//! branches and no allocation. A WebSocket session, which is not a request, ends
//! in [`Vu::finish_session`] (its trace and its measurement).

use std::time::{Duration, Instant};

use pado_http::Exchange;
use pado_metrics::failure::{printable, EVENT_DATA_PREFIX};
use pado_metrics::raw::{RawLlm, RawProtocol};
use pado_metrics::{ErrorKind, FailedEvent, Phases, RequestSample, WsSession};

use crate::plan::{CheckPlan, StepPlan};
use crate::redact::{request_line, Redactor};
use crate::response_view::ResponseView;
use crate::trace::{CheckOutcome, Trace};

use super::described::{check_name, failure_sample, redactor, seen, trace, Cause, Shown};
use super::grpc::GrpcShown;
use super::judged::{evaluate, extract};
use super::sse::FailedEventBufs;
use super::{us, Vu};
use crate::runtime::worker::{FailureKey, RawRequest, WorkerCtx};

/// How far the finish path judges a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Judge {
    /// The step's answer: its checks, then its extraction.
    Final,
    /// A redirect being followed: measured, never judged (the final answer is).
    Hop,
    /// A request its templates could not build: nothing to check, the step's
    /// variables cleared as after any failed answer.
    Unbuilt,
}

/// Why a request failed, in words.
#[derive(Debug)]
pub(super) enum Reason {
    /// pado's own words (a transport failure's, a gRPC code's name): a trace shows
    /// them as they are.
    Said(&'static str),
    /// What a template rendered and why it cannot be sent: it may quote a secret, so
    /// a trace shows it redacted.
    Rendered(String),
}

impl Reason {
    fn text(&self) -> &str {
        match self {
            Reason::Said(s) => s,
            Reason::Rendered(s) => s,
        }
    }
}

/// What was sent, as the trace, the failure sample and the raw record show it.
pub(super) enum Sent<'a> {
    /// An HTTP request's bytes as written to the origin labelled `origin`.
    Http {
        /// The origin's label (`http://127.0.0.1:8080`).
        origin: &'a str,
        /// Request line, headers and body.
        bytes: &'a [u8],
        /// HTTP/1.1 or HTTP/2, for the raw record.
        protocol: RawProtocol,
    },
    /// A gRPC call, shown as the HTTP/2 request it is (built only when shown).
    Grpc(GrpcShown<'a>),
}

impl Sent<'_> {
    /// The request as a person sees it.
    fn shown(&self) -> std::borrow::Cow<'_, [u8]> {
        match self {
            Sent::Http { bytes, .. } => std::borrow::Cow::Borrowed(bytes),
            Sent::Grpc(g) => std::borrow::Cow::Owned(g.request()),
        }
    }

    fn origin(&self) -> &str {
        match self {
            Sent::Http { origin, .. } => origin,
            Sent::Grpc(g) => g.origin,
        }
    }
}

/// Whether checks may read the answer: a status check needs only an answer, the
/// others its content (a gRPC reply that does not decode has a code but no content).
#[derive(Clone, Copy, Debug)]
pub(super) struct Readable {
    /// For `status` checks.
    pub(super) status: bool,
    /// For every other check.
    pub(super) content: bool,
}

impl Readable {
    /// Both, or neither.
    pub(super) fn all(ok: bool) -> Readable {
        Readable {
            status: ok,
            content: ok,
        }
    }

    #[inline]
    fn for_check(self, c: &CheckPlan) -> bool {
        if matches!(c, CheckPlan::Status { .. }) {
            self.status
        } else {
            self.content
        }
    }
}

/// What a request ended with, as its protocol saw it.
pub(super) struct Ended<'a> {
    /// Its measurement; `failed` and `failed_by_check` are set by the finish path.
    pub(super) sample: RequestSample,
    /// When it ended.
    pub(super) end: Instant,
    /// How long it took (what a `max_duration` check judges).
    pub(super) duration: Duration,
    /// The answer as checks and extraction read it.
    pub(super) view: ResponseView<'a>,
    /// The answer's head as a trace shows it.
    pub(super) head: &'a [u8],
    /// The host id the answer came from (whose cookies extraction reads).
    pub(super) host: usize,
    /// Whether it failed before any check: its transport, its status, its code.
    pub(super) status_failed: bool,
    /// What checks may read.
    pub(super) readable: Readable,
    /// Why it failed, in words, if anything says.
    pub(super) reason: Option<Reason>,
    /// The body a failure sample quotes.
    pub(super) failure_body: &'a [u8],
    /// What was sent.
    pub(super) sent: Sent<'a>,
    /// A server stream's messages (the call also counts as one of `grpc_streams`).
    pub(super) stream_msgs: Option<u64>,
    /// An `sse:` step's event stream (its gaps between tokens are in the VU's
    /// [`super::sse::SseRead`]).
    pub(super) sse: Option<pado_metrics::SseStream>,
}

/// When an exchange ended (whether or not it got an answer) and how long it took.
/// `scheduled` is the open model's start: the duration runs from it, so stalls in
/// the generator are not hidden.
#[inline]
pub(super) fn ended_at(
    ex: &Exchange,
    scheduled: Option<Instant>,
    t_start: Instant,
) -> (Instant, Duration) {
    let end = ex.end.unwrap_or_else(Instant::now);
    let duration =
        end.saturating_duration_since(scheduled.unwrap_or(ex.sent_at.unwrap_or(t_start)));
    (end, duration)
}

/// The sample of an exchange that ended after `duration` ([`ended_at`]), failed
/// with `error` as its step sees it (the transport's, or a redirect's); the wait
/// for the open model's `scheduled` start is `blocked`. Built where the finish path
/// reads it: inline, so nothing is copied on the way.
#[inline]
pub(super) fn sample_of(
    ex: &Exchange,
    error: Option<ErrorKind>,
    (scheduled, t_start): (Option<Instant>, Instant),
    duration: Duration,
) -> RequestSample {
    RequestSample {
        status: ex.status,
        error,
        failed: false,
        failed_by_check: false,
        phases: Phases {
            blocked_us: scheduled.map_or(0, |s| us(t_start.saturating_duration_since(s)))
                + us(ex.blocked),
            dns_us: us(ex.setup.dns),
            connecting_us: us(ex.setup.connecting),
            tls_us: us(ex.setup.tls),
            sending_us: us(ex.sending),
            waiting_us: us(ex.waiting),
            receiving_us: us(ex.receiving),
            duration_us: us(duration),
        },
        bytes_sent: ex.bytes_sent,
        bytes_received: ex.bytes_received,
        reconnected: ex.reconnected,
        body_cut: ex.body_cut,
        body_encoded: ex.body_encoded,
        body_decoded: ex.body_decoded,
        http_version: ex.version,
        opened: ex.opened,
    }
}

impl Vu {
    /// End a request of `step`: judge it as `judge` says, then sample, trace,
    /// record and keep its raw record. `e` is taken by reference: built in the
    /// caller's frame, its ~300 bytes are not copied into this call.
    pub(super) fn finish(
        &mut self,
        ctx: &WorkerCtx,
        (scope, step): (&str, &StepPlan),
        judge: Judge,
        e: &mut Ended<'_>,
    ) {
        let status_failed = e.status_failed;
        let mut failed = status_failed;
        let mut first_failed = None;
        let resolved = match judge {
            Judge::Final => self.resolve_checks(ctx, scope, step),
            Judge::Hop | Judge::Unbuilt => Vec::new(),
        };
        if judge == Judge::Final {
            for (i, c) in step.checks.iter().enumerate() {
                let c = resolved.get(i).and_then(Option::as_ref).unwrap_or(c);
                let (id, ok) = evaluate(c, &e.view, e.readable.for_check(c), e.duration);
                ctx.check(id, ok);
                failed |= !ok && step.checks_fail_request;
                if !ok && first_failed.is_none() {
                    first_failed = Some(c);
                }
            }
        }
        // The check on events that failed the request, when one did on an event.
        let mut event_failed = None;
        if let Some(plan) = step.request.as_ref().and_then(|r| r.sse.as_deref()) {
            // Checks and extraction on the stream's events (read only when the
            // answer was a 2xx stream: otherwise its checks fail, as a step's
            // checks do on no answer).
            let read = e.sse.is_some();
            let tally = &self.resp.sse.tally;
            if judge == Judge::Final {
                for (i, c) in plan.checks.iter().enumerate() {
                    let ok = read && tally.check_held(i);
                    ctx.check(c.id, ok);
                    failed |= !ok && plan.checks_fail_request;
                }
                if read && plan.checks_fail_request {
                    event_failed = tally
                        .failed_event()
                        .and_then(|(at, i, ev)| Some((at, plan.checks.get(i)?.id, ev)));
                }
            }
            if judge != Judge::Hop {
                for (i, x) in plan.extract.iter().enumerate() {
                    self.vars[x.var] = tally
                        .extracted(i)
                        .filter(|_| read && e.sample.error.is_none())
                        .map(<[u8]>::to_vec);
                }
            }
        }
        if judge != Judge::Hop {
            for x in &step.extract {
                self.vars[x.var] = if e.sample.error.is_none() {
                    extract(&x.source, &e.view, &self.jar, e.host)
                } else {
                    None
                };
            }
        }
        e.sample.failed = failed;
        e.sample.failed_by_check = failed && !status_failed;
        if failed {
            let check = first_failed.filter(|_| !status_failed);
            let on_event = event_failed.filter(|_| check.is_none() && !status_failed);
            sample_failure(ctx, step, e, check, on_event);
        }
        if let Some(obs) = &ctx.observer {
            let t = self.traced(ctx, (scope, step), judge, e, &resolved, obs.full());
            obs.exchange(t);
        }
        let series = self.series(scope, step);
        match e.stream_msgs {
            Some(n) => ctx.record_grpc_stream(series, &e.sample, n, 0, e.end),
            None => ctx.record(series, &e.sample, e.end),
        }
        let tally = &self.resp.sse.tally;
        if let Some(s) = &e.sse {
            ctx.record_sse(series, (s, tally.input_tokens), &tally.gaps, e.end);
        }
        if ctx.raw_on() {
            let llm = e.sse.filter(|s| s.llm).map(|s| RawLlm {
                ttft_us: s.ttft_us,
                tpot_us: s.tpot_us(),
                output_tokens: s.tokens,
                input_tokens: tally.input_tokens,
            });
            self.raw(ctx, scope, step, (&e.sent, llm), &e.sample, e.end);
        }
    }

    /// End a request its templates could not build (nothing was sent): a failure
    /// of category `template`, timed like any other, with what it rendered (`sent`)
    /// and why (`fault`) in its failure sample and trace; the step's variables
    /// are cleared as after any failed answer.
    #[cold]
    pub(super) fn finish_unbuilt(
        &mut self,
        ctx: &WorkerCtx,
        (scope, step): (&str, &StepPlan),
        (host, sent): (usize, Sent<'_>),
        fault: &crate::render::RenderFault,
        (scheduled, t_start): (Option<Instant>, Instant),
    ) {
        let end = Instant::now();
        let duration = end.saturating_duration_since(scheduled.unwrap_or(t_start));
        let sample = RequestSample {
            error: Some(ErrorKind::Template),
            failed: true,
            phases: Phases {
                blocked_us: scheduled.map_or(0, |s| us(t_start.saturating_duration_since(s))),
                duration_us: us(duration),
                ..Phases::default()
            },
            // Never sent: no connection, no version.
            ..RequestSample::default()
        };
        let mut ended = Ended {
            sample,
            end,
            duration,
            view: ResponseView::new(0, &[], &[]),
            head: &[],
            host,
            status_failed: true,
            readable: Readable::all(false),
            reason: Some(Reason::Rendered(fault.to_string())),
            failure_body: &[],
            sent,
            stream_msgs: None,
            sse: None,
        };
        self.finish(ctx, (scope, step), Judge::Unbuilt, &mut ended);
    }

    /// End a WebSocket session of `step` (not a request: no status to judge, its
    /// `expect` checks counted as they ran): its trace, built by `trace` only
    /// with an observer, and its measurement.
    pub(super) fn finish_session(
        &self,
        ctx: &WorkerCtx,
        step: &StepPlan,
        session: &WsSession,
        end: Instant,
        trace: impl FnOnce() -> Trace,
    ) {
        if let Some(obs) = &ctx.observer {
            obs.exchange(trace());
        }
        ctx.record_ws(step.series, session, end);
    }

    /// Checks with a template in their value, rendered now with this VU's variables
    /// (index-aligned with `step.checks`; empty, so free, without any).
    fn resolve_checks(
        &mut self,
        ctx: &WorkerCtx,
        scope: &str,
        step: &StepPlan,
    ) -> Vec<Option<CheckPlan>> {
        if !step
            .checks
            .iter()
            .any(|c| matches!(c, CheckPlan::Templated { .. }))
        {
            return Vec::new();
        }
        let mut rc = render_ctx!(self, ctx.plan, scope);
        step.checks
            .iter()
            .map(|c| match c {
                CheckPlan::Templated { id, value, kind } => {
                    let mut out = Vec::new();
                    // Check values have no shaped holes (types bind only in JSON
                    // bodies; a leading path hole only in URLs): this cannot fail.
                    let _ = rc.render(value, &mut out);
                    Some(CheckPlan::with_value(*id, kind, &out))
                }
                _ => None,
            })
            .collect()
    }

    /// The debug trace of a finished request (only with an observer).
    #[cold]
    fn traced(
        &self,
        ctx: &WorkerCtx,
        (scope, step): (&str, &StepPlan),
        judge: Judge,
        e: &Ended<'_>,
        resolved: &[Option<CheckPlan>],
        full: bool,
    ) -> Trace {
        let plan = &ctx.plan;
        let request = e.sent.shown();
        let r = redactor(plan, &request, full);
        let shown = Shown {
            origin: e.sent.origin(),
            request: &request,
            head: e.head,
            body: e.view.body,
        };
        let mut t = trace(ctx, (scope, step, self.id), &r, full, shown, &e.sample);
        if judge == Judge::Final {
            t.checks = step
                .checks
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let c = resolved.get(i).and_then(Option::as_ref).unwrap_or(c);
                    let (id, ok) = evaluate(c, &e.view, e.readable.for_check(c), e.duration);
                    CheckOutcome {
                        name: check_name(plan, id),
                        ok,
                        actual: r.text(seen(c, &e.view, e.sample.error, e.duration).as_bytes()),
                    }
                })
                .collect();
            t.extracted = self.extracted(plan, step.extract.iter().map(|x| x.var), &r);
        }
        t.reason = e.reason.as_ref().map(|why| match why {
            Reason::Said(s) => s.to_string(),
            Reason::Rendered(s) => plan.secrets.text(s.as_bytes()),
        });
        t
    }

    /// The variables `vars` as a trace shows them: name and redacted value.
    pub(super) fn extracted(
        &self,
        plan: &crate::plan::RunPlan,
        vars: impl Iterator<Item = usize>,
        r: &Redactor,
    ) -> Vec<(String, Option<String>)> {
        vars.map(|v| {
            let name = plan.vars.get(v).cloned().unwrap_or_default();
            (name, self.vars[v].as_deref().map(|v| r.text(v)))
        })
        .collect()
    }

    /// Keep the raw record of a request of `step` (only with a raw output). Call
    /// right after [`Vu::series`], whose rendered tag values it reads.
    fn raw(
        &self,
        ctx: &WorkerCtx,
        scope: &str,
        step: &StepPlan,
        (sent, llm): (&Sent<'_>, Option<RawLlm>),
        sample: &RequestSample,
        end: Instant,
    ) {
        let (method, url, protocol) = match sent {
            Sent::Http {
                origin,
                bytes,
                protocol,
            } => {
                let (method, target) = request_line(bytes);
                // An absolute-form target (through a proxy) is the whole URL already.
                let origin = if target.starts_with(b"/") { origin } else { "" };
                (method, [origin.as_bytes(), target, b""], *protocol)
            }
            // Method `GRPC`, the URL its server and `/package.Service/Method`.
            Sent::Grpc(g) => (
                &b"GRPC"[..],
                [g.origin.as_bytes(), b"/", g.plan.method.as_bytes()],
                RawProtocol::Grpc,
            ),
        };
        ctx.raw(
            &RawRequest {
                step: step.series,
                scope,
                vu: self.id,
                iter: self.iter,
                method,
                url,
                tags: (!step.tags.is_empty()).then_some((&step.tags[..], &self.tag_buf[..])),
                protocol,
                llm,
            },
            sample,
            end,
        );
    }
}

/// Keep a sample of a failed request, if its step has not kept enough of its
/// category yet. `check` is the first failed check, when a check (not the status
/// or the transport) failed it; `on_event`, when no such check did but a check on
/// events did: the failed event's place, the check's id, and the event.
#[cold]
fn sample_failure(
    ctx: &WorkerCtx,
    step: &StepPlan,
    e: &Ended<'_>,
    check: Option<&CheckPlan>,
    on_event: Option<(u64, u32, &FailedEventBufs)>,
) {
    if !ctx.want_failure_sample(step.series, FailureKey::of(&e.sample, e.status_failed)) {
        return;
    }
    let request = e.sent.shown();
    let mut s = failure_sample(
        ctx,
        step.series,
        &request,
        &e.sample,
        e.failure_body,
        Cause {
            check: check.map(|c| (c, seen(c, &e.view, e.sample.error, e.duration))),
            reason: e.reason.as_ref().map(Reason::text),
        },
        e.end,
    );
    if let Some((index, id, ev)) = on_event {
        let r = ctx.plan.secrets.with_credentials_of(&request);
        let event = FailedEvent {
            index,
            event: r.text(&ev.event),
            id: r.text(&ev.id),
            data: printable(&r.prefix(&ev.data, EVENT_DATA_PREFIX)),
        };
        s.check = ctx.plan.checks.get(id as usize).cloned();
        s.actual = Some(event.describe());
        s.event = Some(event);
    }
    ctx.failure_sample(s);
}
