//! A virtual user: its connections (one per origin), variables, feed cursors, cookie
//! jar, random generator and reused buffers; and what one iteration does with them.

mod described;
mod judged;
mod redirects;

use std::rc::Rc;
use std::time::{Duration, Instant};

use pado_http::{exchange, exchange_h2, is_redirect, Conn, RequestRef, UseHttp1};
use pado_metrics::{ErrorKind, NewConnection, Phases, RequestSample};

use crate::cookies::CookieJar;
use crate::data::FeedCursor;
use crate::plan::{CheckPlan, RequestForm, RequestPlan, ScenarioPlan, StepPlan};
use crate::redact::request_line;
use crate::render::{RenderCtx, RenderFault};
use crate::response_view::ResponseView;
use crate::trace::CheckOutcome;

use super::worker::{RawRequest, WorkerCtx};
use described::{failure_sample, seen, trace, Cause};
use judged::{evaluate, extract};
use pado_metrics::raw::RawProtocol;
use redirects::{hop_request, host_for, redirect_to, ExtraOrigin, Follow};

/// A [`RenderCtx`] over a VU's fields (a macro, not a method, so the other fields
/// stay free to borrow while it lives).
macro_rules! render_ctx {
    ($vu:ident, $plan:expr, $scope:expr) => {
        RenderCtx {
            vu: $vu.id,
            iter: $vu.iter,
            scenario: $scope,
            vars: &$vu.vars,
            feeds: &$plan.feeds,
            rows: &mut $vu.rows,
            cursors: &mut $vu.cursors,
            picks: &$plan.picks,
            rng: &mut $vu.rng,
            scratch: &mut $vu.scratch,
        }
    };
}

mod grpc;
mod websocket;

/// How an iteration ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum IterationEnd {
    /// All steps ran.
    Completed,
    /// A graceful stop arrived between steps.
    Stopped,
}

/// One virtual user.
pub(super) struct Vu {
    ctx: Rc<WorkerCtx>,
    /// 1-based VU number, unique in the run (`{{ vu }}`).
    id: u64,
    /// Iterations started (`{{ iter }}`).
    iter: u64,
    conns: Vec<Option<Conn>>,
    rng: fastrand::Rng,
    /// Kept response body.
    body: Vec<u8>,
    /// Kept response head.
    head: Vec<u8>,
    /// First bytes of a failed response's body when the body is not kept anyway
    /// (filled only for failures; emptied after each).
    fail_body: Vec<u8>,
    /// Decodes gzip, br, zstd and deflate responses (touched only by those).
    decoder: pado_http::decode::BodyDecoder,
    /// Rendered request.
    req: Vec<u8>,
    /// Rendered request body.
    req_body: Vec<u8>,
    /// Rendering scratch.
    scratch: Vec<u8>,
    /// Rendered tag values.
    tag_buf: Vec<u8>,
    vars: Vec<Option<Vec<u8>>>,
    rows: Vec<Option<u64>>,
    cursors: Vec<FeedCursor>,
    jar: CookieJar,
    cookies: bool,
    /// Where the jar's `Cookie` line is in the current request (left out of the
    /// request a redirect makes of it).
    jar_at: std::ops::Range<usize>,
    /// The request of the current redirect hop, and the buffer the next is built in.
    hop_req: Vec<u8>,
    hop_next: Vec<u8>,
    /// Origins first met in redirects (host ids past the plan's origins).
    extra: Vec<ExtraOrigin>,
    /// The next of `extra` to make room when it is full.
    extra_next: usize,
}

fn us(d: Duration) -> u64 {
    d.as_micros().min(u64::MAX as u128) as u64
}

impl Vu {
    /// A VU with no connections yet (they open on first use). `id` is 1-based.
    pub(super) fn new(ctx: Rc<WorkerCtx>, seed: u64, id: u64, cookies: bool) -> Self {
        let plan = &ctx.plan;
        // Ids are global (over all segments of a split test), and so are feed shares.
        let total = plan.vu_id_space().max(1);
        let cursors = plan
            .feeds
            .iter()
            .map(|f| f.cursor(id.saturating_sub(1), total))
            .collect();
        let mut vars = ctx.initial_vars.clone();
        vars.resize(plan.vars.len(), None);
        Vu {
            conns: (0..plan.origins.len()).map(|_| None).collect(),
            rng: fastrand::Rng::with_seed(seed),
            body: Vec::new(),
            head: Vec::new(),
            fail_body: Vec::new(),
            decoder: pado_http::decode::BodyDecoder::for_max_body(plan.max_body),
            req: Vec::new(),
            req_body: Vec::new(),
            scratch: Vec::new(),
            tag_buf: Vec::new(),
            rows: vec![None; plan.feeds.len()],
            cursors,
            vars,
            jar: CookieJar::default(),
            cookies,
            jar_at: 0..0,
            hop_req: Vec::new(),
            hop_next: Vec::new(),
            extra: Vec::new(),
            extra_next: 0,
            id,
            iter: 0,
            ctx,
        }
    }

    /// Variables (for global setup, whose outputs seed every VU).
    pub(super) fn into_vars(self) -> Vec<Option<Vec<u8>>> {
        self.vars
    }

    /// Drop connections that an interrupted exchange may have left mid-message.
    pub(super) fn reset_connections(&mut self) {
        for c in &mut self.conns {
            *c = None;
        }
        for e in &mut self.extra {
            e.conn = None;
        }
    }

    /// Random generator (think times).
    pub(super) fn rng(&mut self) -> &mut fastrand::Rng {
        &mut self.rng
    }

    /// Pick the work entry by weight.
    pub(super) fn pick(&mut self, sc: &ScenarioPlan) -> usize {
        if sc.entries.len() == 1 {
            return 0;
        }
        let x = self.rng.f64() * sc.total_weight;
        sc.entries
            .iter()
            .position(|e| x < e.cum_weight)
            .unwrap_or(sc.entries.len() - 1)
    }

    /// Run one iteration of entry `entry`. `scheduled` is the open-model start time:
    /// the first request is timed from it.
    pub(super) async fn iteration(
        &mut self,
        sc: &ScenarioPlan,
        entry: usize,
        scheduled: Option<Instant>,
    ) -> IterationEnd {
        if self.ctx.plan.connections == pado_scenario::ConnectionReuse::PerIteration {
            // As a new user: the iteration connects anew.
            self.reset_connections();
        }
        let end = self
            .run_steps(&sc.name, &sc.entries[entry].steps, scheduled)
            .await;
        self.iter += 1;
        end
    }

    /// Run setup or teardown steps (once per VU, or once per test).
    pub(super) async fn run_once(&mut self, scope: &str, steps: &[StepPlan]) -> IterationEnd {
        self.run_steps(scope, steps, None).await
    }

    async fn run_steps(
        &mut self,
        scope: &str,
        steps: &[StepPlan],
        mut scheduled: Option<Instant>,
    ) -> IterationEnd {
        // A feed row is chosen once per iteration: all columns agree.
        self.rows.iter_mut().for_each(|r| *r = None);
        for step in steps {
            if let Some((gid, inner)) = &step.group {
                let t = Instant::now();
                for s in inner {
                    if self.step(scope, s, &mut scheduled).await == IterationEnd::Stopped {
                        return IterationEnd::Stopped;
                    }
                }
                let now = Instant::now();
                self.ctx.group(*gid, now - t, now);
                if let Some(th) = step.think.as_ref().filter(|_| !self.ctx.skip_think) {
                    let pause = th.pause(&mut self.rng, Duration::ZERO);
                    if !self.ctx.sleep_until(Instant::now() + pause).await {
                        return IterationEnd::Stopped;
                    }
                }
            } else if self.step(scope, step, &mut scheduled).await == IterationEnd::Stopped {
                return IterationEnd::Stopped;
            }
        }
        IterationEnd::Completed
    }

    async fn step(
        &mut self,
        scope: &str,
        step: &StepPlan,
        scheduled: &mut Option<Instant>,
    ) -> IterationEnd {
        if self.ctx.stopping.get() {
            return IterationEnd::Stopped;
        }
        if let Some(req) = &step.request {
            self.request(scope, step, req, scheduled.take()).await;
        } else if let Some(ws) = &step.ws {
            scheduled.take();
            self.websocket(scope, step, ws).await;
        } else if let Some(g) = &step.grpc {
            self.grpc(scope, step, g, scheduled.take()).await;
        }
        if let Some(t) = step.think.as_ref().filter(|_| !self.ctx.skip_think) {
            let pause = t.pause(&mut self.rng, Duration::ZERO);
            if !self.ctx.sleep_until(Instant::now() + pause).await {
                return IterationEnd::Stopped;
            }
        }
        IterationEnd::Completed
    }

    /// Render a dynamic request into `self.req`; a template whose value cannot be
    /// sent (see [`RenderFault`]) stops it.
    fn render(&mut self, scope: &str, req: &RequestPlan) -> Result<(), RenderFault> {
        let RequestForm::Dynamic {
            prefix,
            target,
            fixed,
            headers,
            body,
            needs_length,
        } = &req.form
        else {
            return Ok(());
        };
        let plan = &self.ctx.plan;
        let mut rc = render_ctx!(self, plan, scope);
        let out = &mut self.req;
        out.clear();
        out.extend_from_slice(prefix);
        rc.render(target, out)?;
        out.extend_from_slice(fixed);
        for (name, value) in headers {
            out.extend_from_slice(name);
            rc.render(value, out)?;
            out.extend_from_slice(b"\r\n");
        }
        self.req_body.clear();
        if let Some(b) = body {
            rc.render(b, &mut self.req_body)?;
        }
        let jar_start = out.len();
        if self.cookies {
            self.jar.write_header(req.origin, out);
        }
        self.jar_at = jar_start..out.len();
        if *needs_length {
            out.extend_from_slice(b"Content-Length: ");
            crate::render::push_int(out, self.req_body.len() as i64);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&self.req_body);
        Ok(())
    }

    async fn request(
        &mut self,
        scope: &str,
        step: &StepPlan,
        req: &RequestPlan,
        mut scheduled: Option<Instant>,
    ) {
        let mut t_start = Instant::now();
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
                    scope,
                    step,
                    req,
                    (bytes, is_head, resend_safe),
                    host,
                    hops,
                    scheduled,
                    t_start,
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
    /// for it. A redirect to follow is recorded as a sample of its own and returned
    /// (its URL and status); anything else is the step's final response: checks,
    /// extraction, failure samples and the sample are done here and `None` returned.
    #[allow(clippy::too_many_arguments)]
    async fn exchange_once(
        &mut self,
        scope: &str,
        step: &StepPlan,
        req: &RequestPlan,
        (bytes, is_head, resend_safe): (&[u8], bool, bool),
        host: usize,
        hops: u32,
        scheduled: Option<Instant>,
        t_start: Instant,
    ) -> Option<Follow> {
        let ctx = self.ctx.clone();
        let n_plan = ctx.plan.origins.len();
        // Debugging (`--http-debug`, `--once`) shows every head and body.
        let traced = ctx.observer.is_some();
        let body_kept = req.keep_body || traced;
        let keep_head_always = req.keep_head || traced;
        let want_head = req.keep_head || self.cookies || traced || req.follow_redirects;
        // What the exchange keeps of the response (made again for a request that
        // falls back to HTTP/1.1, the first having been handed to HTTP/2's).
        macro_rules! request_ref {
            () => {
                RequestRef {
                    bytes,
                    is_head,
                    resend_safe,
                    timeout: req.timeout,
                    keep_body: if body_kept {
                        Some((&mut self.body, ctx.plan.max_body))
                    } else {
                        None
                    },
                    keep_head: if want_head {
                        Some((&mut self.head, keep_head_always))
                    } else {
                        None
                    },
                    failed_prefix: Some((&mut self.fail_body, &req.expect)),
                    decoder: Some(&mut self.decoder),
                }
            };
        }
        let extra_origin;
        let (slot, origin) = match host.checked_sub(n_plan) {
            None => (&mut self.conns[host], &ctx.plan.origins[host]),
            Some(k) => {
                let e = &mut self.extra[k];
                extra_origin = e.origin.clone();
                (&mut e.conn, &*extra_origin)
            }
        };
        // HTTP/2 for the plan's origins that speak it (an origin first met in a
        // redirect is spoken with HTTP/1.1).
        let pool = ctx.h2.get(host).and_then(Option::as_ref);
        let mut protocol = RawProtocol::Http1;
        let ex = match pool {
            None => {
                let ex = exchange(slot, origin, request_ref!()).await;
                if ctx.plan.connections == pado_scenario::ConnectionReuse::PerRequest {
                    *slot = None;
                }
                ex
            }
            Some(pool) => {
                // The plan's HTTP/2 form, when what is sent is the plan's static request.
                let prebuilt = req.h2.as_ref().filter(|_| {
                    hops == 0
                        && matches!(&req.form, RequestForm::Static { bytes: b, .. }
                            if std::ptr::eq(b.as_ptr(), bytes.as_ptr()))
                });
                match exchange_h2(pool, origin, request_ref!(), prebuilt).await {
                    Ok(ex) => {
                        protocol = RawProtocol::Http2;
                        ex
                    }
                    Err(UseHttp1(opened)) => {
                        let setup = opened.as_ref().map(|(_, t)| *t);
                        if let Some((c, _)) = opened {
                            *slot = Some(c);
                        }
                        let mut ex = exchange(slot, origin, request_ref!()).await;
                        if let Some(t) = setup {
                            ex.setup.dns += t.dns;
                            ex.setup.connecting += t.connecting;
                            ex.setup.tls += t.tls;
                            // The pool opened it for this request, which the
                            // server chose to answer in HTTP/1.1.
                            ex.opened = NewConnection::opened(origin.tls.is_some());
                        }
                        ex
                    }
                }
            }
        };
        let end = ex.end.unwrap_or_else(Instant::now);
        let began = ex.sent_at.unwrap_or(t_start);
        let duration = match scheduled {
            // Open model: from the scheduled start, so stalls are not hidden.
            Some(s) => end.saturating_duration_since(s),
            None => end.saturating_duration_since(began),
        };
        let ok_transport = ex.error.is_none();
        let body: &[u8] = if body_kept && ok_transport {
            &self.body
        } else {
            &[]
        };
        let head: &[u8] = if ok_transport { &self.head } else { &[] };
        let view = ResponseView::new(ex.status, head, body);
        if self.cookies && !head.is_empty() {
            self.jar.absorb(host, &view);
        }
        let mut error = ex.error;
        let mut follow = None;
        if req.follow_redirects && ok_transport && is_redirect(ex.status) {
            // A redirect without a `Location` is a response like any other.
            if let Some(loc) = view.header("location") {
                if hops >= MAX_REDIRECTS {
                    error = Some(ErrorKind::TooManyRedirects);
                } else {
                    let to = match redirect_to(&origin.label, bytes, loc) {
                        Some(url) => {
                            let found = host_for(
                                &ctx.plan,
                                &mut self.extra,
                                &mut self.extra_next,
                                &mut self.jar,
                                &url,
                            )
                            .await;
                            found.map(|h| (url, h))
                        }
                        None => None,
                    };
                    match to {
                        Some((url, h)) => {
                            let same_origin = h == host;
                            follow = Some(Follow {
                                url,
                                status: ex.status,
                                host: h,
                                same_origin,
                            });
                        }
                        None => error = Some(ErrorKind::BadRedirect),
                    }
                }
            }
        }
        let ok_transport = error.is_none();
        let phases = Phases {
            blocked_us: scheduled.map_or(0, |s| us(t_start.saturating_duration_since(s)))
                + us(ex.blocked),
            dns_us: us(ex.setup.dns),
            connecting_us: us(ex.setup.connecting),
            tls_us: us(ex.setup.tls),
            sending_us: us(ex.sending),
            waiting_us: us(ex.waiting),
            receiving_us: us(ex.receiving),
            duration_us: us(duration),
        };
        let mut sample = RequestSample {
            status: ex.status,
            error,
            failed: false,
            failed_by_check: false,
            phases,
            bytes_sent: ex.bytes_sent,
            bytes_received: ex.bytes_received,
            reconnected: ex.reconnected,
            body_cut: ex.body_cut,
            body_encoded: ex.body_encoded,
            body_decoded: ex.body_decoded,
            http_version: ex.version,
            opened: ex.opened,
        };
        if let Some(f) = follow {
            // A hop: its own sample under the step's name, never a failure; checks
            // and extraction wait for the final response.
            self.fail_body.clear();
            if let Some(obs) = &ctx.observer {
                obs.exchange(trace(
                    &ctx,
                    scope,
                    step,
                    self.id,
                    &origin.label,
                    bytes,
                    head,
                    body,
                    &sample,
                    obs.full(),
                    Vec::new(),
                    Vec::new(),
                ));
            }
            let series = self.series(scope, step);
            ctx.record(series, &sample, end);
            if ctx.raw_on() {
                self.raw(scope, step, &origin.label, bytes, &sample, end, protocol);
            }
            return Some(f);
        }
        let mut failed = !ok_transport || !req.expect.contains(ex.status);
        let status_failed = failed;
        let mut first_failed = None;
        // Checks with a template in their value, rendered now with this VU's
        // variables (index-aligned with `step.checks`; empty, so free, without any).
        let resolved: Vec<Option<CheckPlan>> = if step
            .checks
            .iter()
            .any(|c| matches!(c, CheckPlan::Templated { .. }))
        {
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
        } else {
            Vec::new()
        };
        for (i, c) in step.checks.iter().enumerate() {
            let c = resolved.get(i).and_then(Option::as_ref).unwrap_or(c);
            let (id, ok) = evaluate(c, &view, ok_transport, duration);
            ctx.check(id, ok);
            failed |= !ok && step.checks_fail_request;
            if !ok && first_failed.is_none() {
                first_failed = Some(c);
            }
        }
        for e in &step.extract {
            let value = if ok_transport {
                extract(&e.source, &view, &self.jar, host)
            } else {
                None
            };
            self.vars[e.var] = value;
        }
        sample.failed = failed;
        sample.failed_by_check = failed && !status_failed;
        if failed {
            // Only failures pay for this, and only the first few per kind allocate.
            let code = match error {
                Some(e) => 1000 + e.index() as u16,
                None if status_failed => ex.status,
                None => 2000,
            };
            if ctx.want_failure_sample(step.series, code) {
                let shown_body: &[u8] = if body_kept {
                    view.body
                } else {
                    &self.fail_body
                };
                let check = first_failed.filter(|_| !status_failed);
                let s = failure_sample(
                    &ctx,
                    step.series,
                    bytes,
                    &sample,
                    shown_body,
                    Cause {
                        check: check.map(|c| (c, seen(c, &view, error, duration))),
                        reason: ex.reason.map(Into::into),
                    },
                    end,
                );
                ctx.failure_sample(s);
            }
            self.fail_body.clear();
        }
        if let Some(obs) = &ctx.observer {
            let full = obs.full();
            let plan = &ctx.plan;
            let with_credentials;
            let r = if full {
                &plan.secrets
            } else {
                with_credentials = plan.secrets.with_credentials_of(bytes);
                &with_credentials
            };
            let checks = step
                .checks
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let c = resolved.get(i).and_then(Option::as_ref).unwrap_or(c);
                    let (id, ok) = evaluate(c, &view, ok_transport, duration);
                    CheckOutcome {
                        name: plan.checks.get(id as usize).cloned().unwrap_or_default(),
                        ok,
                        actual: r.text(seen(c, &view, error, duration).as_bytes()),
                    }
                })
                .collect();
            let extracted = step
                .extract
                .iter()
                .map(|e| {
                    let name = plan.vars.get(e.var).cloned().unwrap_or_default();
                    (name, self.vars[e.var].as_deref().map(|v| r.text(v)))
                })
                .collect();
            let mut t = trace(
                &ctx,
                scope,
                step,
                self.id,
                &origin.label,
                bytes,
                head,
                body,
                &sample,
                full,
                checks,
                extracted,
            );
            t.reason = ex.reason.map(str::to_string);
            obs.exchange(t);
        }
        let series = self.series(scope, step);
        ctx.record(series, &sample, end);
        if ctx.raw_on() {
            self.raw(scope, step, &origin.label, bytes, &sample, end, protocol);
        }
        None
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
        let end = Instant::now();
        let duration = end.saturating_duration_since(scheduled.unwrap_or(t_start));
        let sample = RequestSample {
            status: 0,
            error: Some(ErrorKind::Template),
            failed: true,
            failed_by_check: false,
            phases: Phases {
                blocked_us: scheduled.map_or(0, |s| us(t_start.saturating_duration_since(s))),
                duration_us: us(duration),
                ..Phases::default()
            },
            bytes_sent: 0,
            bytes_received: 0,
            reconnected: false,
            body_cut: false,
            body_encoded: 0,
            body_decoded: 0,
            // Never sent: no connection, no version.
            http_version: None,
            opened: NewConnection::No,
        };
        for e in &step.extract {
            self.vars[e.var] = None;
        }
        let reason = fault.to_string();
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
        let code = 1000 + ErrorKind::Template.index() as u16;
        if ctx.want_failure_sample(step.series, code) {
            let s = failure_sample(
                &ctx,
                step.series,
                &shown,
                &sample,
                &[],
                Cause {
                    check: None,
                    reason: Some(reason.clone().into()),
                },
                end,
            );
            ctx.failure_sample(s);
        }
        if let Some(obs) = &ctx.observer {
            let mut t = trace(
                &ctx,
                scope,
                step,
                self.id,
                &ctx.plan.origins[req.origin].label,
                &shown,
                &[],
                &[],
                &sample,
                obs.full(),
                Vec::new(),
                Vec::new(),
            );
            t.reason = Some(ctx.plan.secrets.text(reason.as_bytes()));
            obs.exchange(t);
        }
        let series = self.series(scope, step);
        ctx.record(series, &sample, end);
        if ctx.raw_on() {
            let label = &ctx.plan.origins[req.origin].label;
            self.raw(scope, step, label, &shown, &sample, end, RawProtocol::Http1);
        }
    }

    /// Keep the raw record of a request of `step` whose bytes were `sent` to
    /// `origin` (only with a raw output). Call right after [`Vu::series`], whose
    /// rendered tag values it reads.
    #[allow(clippy::too_many_arguments)]
    fn raw(
        &self,
        scope: &str,
        step: &StepPlan,
        origin: &str,
        sent: &[u8],
        sample: &RequestSample,
        end: Instant,
        protocol: RawProtocol,
    ) {
        let (method, target) = request_line(sent);
        // An absolute-form target (through a proxy) is the whole URL already.
        let origin = if target.starts_with(b"/") { origin } else { "" };
        self.ctx.raw(
            &RawRequest {
                step: step.series,
                scope,
                vu: self.id,
                iter: self.iter,
                method,
                url: [origin.as_bytes(), target, b""],
                tags: (!step.tags.is_empty()).then_some((&step.tags[..], &self.tag_buf[..])),
                protocol,
            },
            sample,
            end,
        );
    }

    /// The series a request of `step` is recorded under (its tags rendered now).
    fn series(&mut self, scope: &str, step: &StepPlan) -> u32 {
        if step.tags.is_empty() {
            return step.series;
        }
        self.tag_buf.clear();
        let ctx = &self.ctx;
        let plan = &ctx.plan;
        let mut rc = render_ctx!(self, plan, scope);
        for (i, (_, t)) in step.tags.iter().enumerate() {
            if i > 0 {
                self.tag_buf.push(0x1f);
            }
            // Tags have no shaped holes (see the checks above): this cannot fail.
            let _ = rc.render(t, &mut self.tag_buf);
        }
        ctx.tagged_series(step.series, &step.tags, &self.tag_buf)
    }
}

/// Most redirects one request follows, as k6's `maxRedirects` default: a chain longer
/// than this fails with [`ErrorKind::TooManyRedirects`].
pub(super) const MAX_REDIRECTS: u32 = 10;
