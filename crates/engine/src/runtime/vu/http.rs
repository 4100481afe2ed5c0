//! An HTTP step (HTTP/1.1 or HTTP/2): the request built (static bytes, the jar's
//! cookies, or rendered templates), sent (HTTP/1.1 here, HTTP/2 through
//! [`super::send`]), its redirects followed
//! (each hop a sample of its own), and its final answer handed to the finish path
//! ([`super::finish`]).

use std::time::Instant;

use pado_http::{exchange_into, is_redirect, Origin};
use pado_metrics::raw::RawProtocol;
use pado_metrics::ErrorKind;
use pado_scenario::ConnectionReuse;

use crate::plan::{RequestForm, RequestPlan, StepPlan};
use crate::redact::request_line;
use crate::render::RenderFault;
use crate::response_view::ResponseView;
use crate::runtime::worker::WorkerCtx;

use super::finish::{ended_at, sample_of, Ended, Judge, Readable, Reason, Sent};
use super::redirects::{hop_request, host_for, redirect_to, Follow};
use super::send::{conn_slot, Outgoing};
use super::{Vu, MAX_REDIRECTS};

/// The request being sent in a chain of redirects: its bytes, whether it is a HEAD
/// and whether it may be sent again.
type Hop<'a> = (&'a [u8], bool, bool);

impl Vu {
    /// Run the HTTP request of `step`, following its redirects. `scheduled` is the
    /// open model's start of the iteration (the first request is timed from it).
    pub(super) async fn request(
        &mut self,
        scope: &str,
        step: &StepPlan,
        req: &RequestPlan,
        mut scheduled: Option<Instant>,
    ) {
        let mut t_start = Instant::now();
        self.resp.sse.tally.input_tokens = None;
        if let Some(pr) = req.sse.as_ref().and_then(|s| s.prompt.as_ref()) {
            self.size_prompt(scope, step.series, pr);
        }
        let use_jar = self.cookies && !self.jar.is_empty();
        self.jar_at = 0..0;
        match &req.form {
            RequestForm::Static { bytes, head_end } if use_jar => {
                self.req.clear();
                self.req.extend_from_slice(&bytes[..*head_end]);
                self.jar.write_header(req.origin, &mut self.req);
                self.jar_at = *head_end..self.req.len();
                self.req.extend_from_slice(&bytes[*head_end..]);
            }
            RequestForm::Static { .. } => {}
            RequestForm::Dynamic { .. } => {
                if let Err(fault) = self.render(scope, req) {
                    self.unbuilt(scope, step, req, fault, (scheduled, t_start));
                    return;
                }
            }
        }
        // Redirects followed so far, and the host (an index into the plan's origins,
        // or past them into `extra`) the current request goes to.
        let mut hops = 0u32;
        let mut host = req.origin;
        let mut is_head = req.is_head;
        let mut resend_safe = req.resend_safe;
        loop {
            // The current request's bytes, owned here while it runs (put back below).
            let buf = std::mem::take(if hops == 0 {
                &mut self.req
            } else {
                &mut self.hop_req
            });
            let bytes: &[u8] = match &req.form {
                RequestForm::Static { bytes, .. } if hops == 0 && !use_jar => bytes,
                _ => &buf,
            };
            let next = self
                .exchange_once(
                    (scope, step, req),
                    (bytes, is_head, resend_safe),
                    (host, hops),
                    (scheduled, t_start),
                )
                .await;
            let Some(f) = next else {
                if hops == 0 {
                    self.req = buf;
                } else {
                    self.hop_req = buf;
                }
                return;
            };
            let jar = self.cookies.then_some((&self.jar, f.host));
            let mut out = std::mem::take(&mut self.hop_next);
            let hop = hop_request(
                bytes,
                &self.jar_at,
                f.status,
                &f.url,
                f.same_origin,
                jar,
                &mut out,
            );
            self.jar_at = hop.jar_at;
            is_head = hop.is_head;
            resend_safe = (resend_safe && hop.same_method) || hop.idempotent;
            // The bytes just sent go back to their buffer; the new request becomes the
            // current one.
            if hops == 0 {
                self.req = buf;
                self.hop_next = std::mem::replace(&mut self.hop_req, out);
            } else {
                self.hop_next = buf;
                self.hop_req = out;
            }
            hops += 1;
            host = f.host;
            scheduled = None;
            t_start = Instant::now();
        }
    }

    /// Send one request (the step's, or a redirect hop) on host `host` and account
    /// for it. A redirect to follow is finished as a hop and returned (its URL and
    /// status); anything else is the step's final answer, finished and judged, and
    /// `None` returned. The exchange is written into the VU's [`Vu::ex`] and read
    /// there: its figures are not moved from future to future.
    async fn exchange_once(
        &mut self,
        (scope, step, req): (&str, &StepPlan, &RequestPlan),
        (bytes, is_head, resend_safe): Hop<'_>,
        (host, hops): (usize, u32),
        (scheduled, t_start): (Option<Instant>, Instant),
    ) -> Option<Follow> {
        let ctx = self.ctx.clone();
        // Debugging (`--http-debug`, `--once`) shows every head and body.
        let traced = ctx.observer.is_some();
        let out = Outgoing {
            bytes,
            is_head,
            resend_safe,
            keep_body: req.keep_body || traced,
            want_head: req.keep_head || self.cookies || traced || req.follow_redirects,
            keep_head_always: req.keep_head || traced,
        };
        let extra_origin;
        let origin: &Origin = match host.checked_sub(ctx.plan.origins.len()) {
            None => &ctx.plan.origins[host],
            Some(k) => {
                extra_origin = self.extra[k].origin.clone();
                &extra_origin
            }
        };
        let protocol = match ctx.h2.get(host).and_then(Option::as_ref) {
            // HTTP/1.1 on the VU's own connection (an origin first met in a redirect
            // is spoken with it), awaited here: the hot path, through no further
            // future.
            None => {
                let slot = conn_slot(&mut self.conns, &mut self.extra, host);
                let to_send = self.resp.request_ref(req, out, ctx.plan.max_body);
                exchange_into(slot, origin, to_send, &mut self.ex).await;
                if ctx.plan.connections == ConnectionReuse::PerRequest {
                    *slot = None;
                }
                RawProtocol::Http1
            }
            Some(pool) => {
                let at = (host, hops);
                self.send_h2(&ctx, (req, out), (origin, pool), at).await
            }
        };
        let (status, transport) = (self.ex.status, self.ex.error);
        // The answer's buffers, held here while the finish path runs (put back below).
        let resp_body = std::mem::take(&mut self.resp.body);
        let resp_head = std::mem::take(&mut self.resp.head);
        let fail_body = std::mem::take(&mut self.resp.fail_body);
        let ok_transport = transport.is_none();
        let body: &[u8] = if out.keep_body && ok_transport {
            &resp_body
        } else {
            &[]
        };
        let head: &[u8] = if ok_transport { &resp_head } else { &[] };
        let view = ResponseView::new(status, head, body);
        if self.cookies && !head.is_empty() {
            self.jar.absorb(host, &view);
        }
        // Only a redirect to follow waits for anything more (a new origin's name).
        let (follow, error) = if req.follow_redirects && ok_transport && is_redirect(status) {
            self.redirect(&ctx, (origin, bytes, host, hops), status, &view)
                .await
        } else {
            (None, transport)
        };
        // A hop: its own sample under the step's name, never a failure; checks and
        // extraction wait for the final answer.
        let judge = if follow.is_some() {
            Judge::Hop
        } else {
            Judge::Final
        };
        let (end, duration) = ended_at(&self.ex, scheduled, t_start);
        let mut ended = Ended {
            sample: sample_of(&self.ex, error, (scheduled, t_start), duration),
            end,
            duration,
            view,
            head,
            host,
            status_failed: judge == Judge::Final
                && (error.is_some() || !req.expect.contains(status)),
            readable: Readable::all(error.is_none()),
            reason: self
                .ex
                .reason
                .filter(|_| judge == Judge::Final)
                .map(Reason::Said),
            failure_body: if out.keep_body { body } else { &fail_body },
            sent: Sent::Http {
                origin: &origin.label,
                bytes,
                protocol,
            },
            stream_msgs: None,
            sse: req
                .sse
                .as_ref()
                .filter(|_| judge == Judge::Final && (200..300).contains(&status))
                .map(|_| {
                    let sent = self.ex.sent_at.unwrap_or(t_start);
                    let events = self.resp.sse.parser.events();
                    self.resp.sse.tally.stream(events, sent, end)
                }),
        };
        self.finish(&ctx, (scope, step), judge, &mut ended);
        self.resp.body = resp_body;
        self.resp.head = resp_head;
        self.resp.fail_body = fail_body;
        self.resp.fail_body.clear();
        follow
    }

    /// Where a redirect answer (`status`, a redirect, to a step that follows them)
    /// leads: the hop to make, or the failure that ends the chain (too many hops, a
    /// `Location` that cannot be followed), or neither when it has no `Location`.
    async fn redirect(
        &mut self,
        ctx: &WorkerCtx,
        (origin, bytes, host, hops): (&Origin, &[u8], usize, u32),
        status: u16,
        view: &ResponseView<'_>,
    ) -> (Option<Follow>, Option<ErrorKind>) {
        // A redirect without a `Location` is a response like any other.
        let Some(loc) = view.header("location") else {
            return (None, None);
        };
        if hops >= MAX_REDIRECTS {
            return (None, Some(ErrorKind::TooManyRedirects));
        }
        let Some(url) = redirect_to(&origin.label, bytes, loc) else {
            return (None, Some(ErrorKind::BadRedirect));
        };
        let found = host_for(
            &ctx.plan,
            &mut self.extra,
            &mut self.extra_next,
            &mut self.jar,
            &url,
        )
        .await;
        match found {
            Some(h) => (
                Some(Follow {
                    url,
                    status,
                    host: h,
                    same_origin: h == host,
                }),
                None,
            ),
            None => (None, Some(ErrorKind::BadRedirect)),
        }
    }

    /// A request its templates could not build: nothing is sent. It counts as a
    /// failed request of category `template` (as a name that does not resolve counts
    /// as `dns`), with the reason in the failure samples and the debug trace; the
    /// step's variables are cleared as after any failed response.
    #[cold]
    fn unbuilt(
        &mut self,
        scope: &str,
        step: &StepPlan,
        req: &RequestPlan,
        fault: RenderFault,
        (scheduled, t_start): (Option<Instant>, Instant),
    ) {
        let ctx = self.ctx.clone();
        // The request as far as it was rendered; a URL that could not be built is
        // shown as its hole.
        let mut shown = self.req.clone();
        let (method, target) = request_line(&shown);
        if target.is_empty() {
            shown = format!(
                "{} {{{{{}}}}} HTTP/1.1\r\n",
                String::from_utf8_lossy(method),
                fault.hole.replace(' ', "")
            )
            .into_bytes();
        }
        let sent = Sent::Http {
            origin: &ctx.plan.origins[req.origin].label,
            bytes: &shown,
            protocol: RawProtocol::Http1,
        };
        let at = (scheduled, t_start);
        self.finish_unbuilt(&ctx, (scope, step), (req.origin, sent), &fault, at);
    }
}
