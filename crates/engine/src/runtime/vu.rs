//! A virtual user: its connections (one per origin), variables, feed cursors, cookie
//! jar, random generator and reused buffers; and what one iteration does with them.

use std::rc::Rc;
use std::time::{Duration, Instant};

use pado_http::{exchange, is_redirect, tls_client_config, Conn, Origin, RequestRef};
use pado_metrics::failure::{printable, BODY_PREFIX};
use pado_metrics::{ErrorKind, FailureSample, Phases, RequestSample};

use crate::cookies::CookieJar;
use crate::data::FeedCursor;
use crate::plan::{
    CheckPlan, ExtractSource, RequestForm, RequestPlan, RunPlan, ScenarioPlan, StepPlan,
};
use crate::redact::{body_of, headers, request_line, Redactor};
use crate::render::{RenderCtx, RenderFault};
use crate::response_view::ResponseView;
use crate::trace::{BodyShown, CheckOutcome, Trace, TRACE_BODY_BYTES};

use super::worker::WorkerCtx;

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
        let total = plan.max_vus().max(1);
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
        let keep_body = if body_kept {
            Some((&mut self.body, ctx.plan.max_body))
        } else {
            None
        };
        let keep_head = if req.keep_head || self.cookies || traced || req.follow_redirects {
            Some((&mut self.head, req.keep_head || traced))
        } else {
            None
        };
        let extra_origin;
        let (slot, origin) = match host.checked_sub(n_plan) {
            None => (&mut self.conns[host], &ctx.plan.origins[host]),
            Some(k) => {
                let e = &mut self.extra[k];
                extra_origin = e.origin.clone();
                (&mut e.conn, &*extra_origin)
            }
        };
        let ex = exchange(
            slot,
            origin,
            RequestRef {
                bytes,
                is_head,
                resend_safe,
                timeout: req.timeout,
                keep_body,
                keep_head,
                failed_prefix: Some((&mut self.fail_body, &req.expect)),
            },
        )
        .await;
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
            blocked_us: scheduled.map_or(0, |s| us(t_start.saturating_duration_since(s))),
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
/// Most origins that are not in the plan (met in redirects) one VU keeps a connection
/// to at a time.
const MAX_EXTRA_ORIGINS: usize = 8;

/// An origin first met in a redirect, with the VU's connection to it.
struct ExtraOrigin {
    origin: Rc<Origin>,
    conn: Option<Conn>,
}

/// A redirect to follow: where, the status that asked, the host id to send to and
/// whether it is the origin of the request that got the redirect.
struct Follow {
    url: url::Url,
    status: u16,
    host: usize,
    same_origin: bool,
}

/// The host id of `url`'s origin: one of the plan's, one this VU met in an earlier
/// redirect (`extra`, ids past the plan's), or a new one (resolved now; the oldest
/// extra one makes room when [`MAX_EXTRA_ORIGINS`] are kept, and its cookies go).
/// `None` when the URL cannot have a connection (a host that is not a valid TLS
/// server name).
async fn host_for(
    plan: &RunPlan,
    extra: &mut Vec<ExtraOrigin>,
    next_evicted: &mut usize,
    jar: &mut CookieJar,
    url: &url::Url,
) -> Option<usize> {
    let key = origin_key(url);
    let n = plan.origins.len();
    let same = |o: &Origin| o.tls.is_some() == key.0 && o.host == key.1 && o.port == key.2;
    if let Some(i) = plan.origins.iter().position(same) {
        return Some(i);
    }
    if let Some(k) = extra.iter().position(|e| same(&e.origin)) {
        return Some(n + k);
    }
    let insecure = plan.insecure;
    let origin = if matches!(url.host(), Some(url::Host::Domain(_))) {
        // A name to resolve: off the worker thread, which other VUs share.
        let u = url.clone();
        tokio::task::spawn_blocking(move || Origin::for_url(&u, || tls_client_config(insecure)))
            .await
            .ok()?
    } else {
        Origin::for_url(url, || tls_client_config(insecure))
    }
    .ok()?;
    let e = ExtraOrigin {
        origin: Rc::new(origin),
        conn: None,
    };
    if extra.len() < MAX_EXTRA_ORIGINS {
        extra.push(e);
        return Some(n + extra.len() - 1);
    }
    let k = *next_evicted % MAX_EXTRA_ORIGINS;
    *next_evicted = next_evicted.wrapping_add(1);
    jar.forget(n + k);
    extra[k] = e;
    Some(n + k)
}

/// Redirect statuses that are followed (RFC 9110 §15.4; 300, 304 and 305 are not).
/// (tls, host, port) of a URL, as [`Origin`] holds them.
fn origin_key(url: &url::Url) -> (bool, String, u16) {
    (
        url.scheme() == "https",
        url.host_str().unwrap_or_default().to_string(),
        url.port_or_known_default().unwrap_or(80),
    )
}

/// Where a redirect leads: `location` (absolute, or relative to the request that got
/// it) resolved against the request's URL, without its fragment. `None` when it is not
/// a URL, or not an http(s) URL with a host: such a redirect is never followed.
fn redirect_to(origin_label: &str, request: &[u8], location: &[u8]) -> Option<url::Url> {
    let (_, target) = request_line(request);
    let base = url::Url::parse(&format!(
        "{origin_label}{}",
        std::str::from_utf8(target).ok()?
    ))
    .ok()?;
    let loc = std::str::from_utf8(location).ok()?.trim();
    let mut url = base.join(loc).ok()?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
        return None;
    }
    url.set_fragment(None);
    Some(url)
}

/// What [`hop_request`] decided.
struct Hop {
    is_head: bool,
    /// The method stayed what it was (307, 308, or a GET/HEAD).
    same_method: bool,
    /// The new method is idempotent (safe to resend).
    idempotent: bool,
    /// Where its `Cookie` line from the jar is.
    jar_at: std::ops::Range<usize>,
}

/// The request a redirect (`status`) to `url` makes of `prev` (the request that got
/// it), into `out`: 307 and 308 keep the method and body; 301, 302 and 303 turn any
/// method but GET and HEAD into a GET without a body (and without the body's
/// headers), as browsers, Go (k6) and curl do. Headers are kept, but for the `Host`
/// of a new origin and, on another origin, the credentials (`Authorization`,
/// `Proxy-Authorization`, `Cookie`). The jar's cookies (left out of `prev` by
/// `prev_jar`) are those of the new host.
fn hop_request(
    prev: &[u8],
    prev_jar: &std::ops::Range<usize>,
    status: u16,
    url: &url::Url,
    same_origin: bool,
    jar: Option<(&CookieJar, usize)>,
    out: &mut Vec<u8>,
) -> Hop {
    let (method, _) = request_line(prev);
    let head_end = memchr::memmem::find(prev, b"\r\n\r\n").map_or(prev.len(), |i| i + 2);
    let body = prev.get(head_end + 2..).unwrap_or_default();
    let keep = matches!(status, 307 | 308);
    let same_method = keep || method == b"GET" || method == b"HEAD";
    let method: &[u8] = if same_method { method } else { b"GET" };
    out.clear();
    out.extend_from_slice(method);
    out.push(b' ');
    out.extend_from_slice(url[url::Position::BeforePath..url::Position::AfterQuery].as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    let mut had_length = false;
    let mut had_host = false;
    let first_end = memchr::memchr(b'\n', prev).map_or(prev.len(), |i| i + 1);
    let mut at = first_end;
    while at < head_end {
        let line_end = memchr::memchr(b'\n', &prev[at..head_end]).map_or(head_end, |i| at + i + 1);
        let line = &prev[at..line_end];
        let in_jar = prev_jar.contains(&at);
        at = line_end;
        let name = line.split(|&c| c == b':').next().unwrap_or_default();
        let is = |n: &str| name.eq_ignore_ascii_case(n.as_bytes());
        if in_jar || line.len() <= 2 {
            continue;
        }
        if is("content-length") {
            had_length = true;
            continue;
        }
        // Another origin gets its own Host and none of this one's credentials.
        let origin_bound =
            is("host") || is("authorization") || is("proxy-authorization") || is("cookie");
        let body_bound = is("content-type") || is("content-encoding") || is("transfer-encoding");
        let drop = (!same_origin && origin_bound) || (!keep && body_bound);
        if drop {
            continue;
        }
        had_host |= is("host");
        out.extend_from_slice(line);
    }
    if !had_host {
        out.extend_from_slice(b"Host: ");
        out.extend_from_slice(url.host_str().unwrap_or_default().as_bytes());
        if let Some(port) = url.port() {
            out.push(b':');
            crate::render::push_int(out, i64::from(port));
        }
        out.extend_from_slice(b"\r\n");
    }
    let jar_start = out.len();
    if let Some((jar, host)) = jar {
        jar.write_header(host, out);
    }
    let jar_at = jar_start..out.len();
    // 301, 302 and 303 never carry a body on: the new request is a GET (or HEAD).
    let body: &[u8] = if keep { body } else { &[] };
    if keep && (had_length || !body.is_empty()) {
        out.extend_from_slice(b"Content-Length: ");
        crate::render::push_int(out, body.len() as i64);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    Hop {
        is_head: method == b"HEAD",
        same_method,
        idempotent: pado_http::idempotent_method(std::str::from_utf8(method).unwrap_or("")),
        jar_at,
    }
}

/// The trace of one exchange for `--http-debug` and `--once`, redacted.
#[allow(clippy::too_many_arguments)]
fn trace(
    ctx: &WorkerCtx,
    scope: &str,
    step: &StepPlan,
    vu: u64,
    origin_label: &str,
    bytes: &[u8],
    head: &[u8],
    body: &[u8],
    sample: &RequestSample,
    full: bool,
    checks: Vec<CheckOutcome>,
    extracted: Vec<(String, Option<String>)>,
) -> Trace {
    let plan = &ctx.plan;
    let with_credentials;
    let r = if full {
        &plan.secrets
    } else {
        with_credentials = plan.secrets.with_credentials_of(bytes);
        &with_credentials
    };
    let (method, target) = request_line(bytes);
    Trace {
        scope: scope.to_string(),
        step: step_name(ctx, step.series),
        vu,
        method: String::from_utf8_lossy(method).into_owned(),
        url: r.text(format!("{origin_label}{}", String::from_utf8_lossy(target)).as_bytes()),
        request_headers: headers(bytes, r, full),
        request_body: shown(r, body_of(bytes)),
        status: sample.status,
        error: sample.error,
        reason: None,
        failed: sample.failed,
        response_headers: headers(head, r, full),
        response_body: shown(r, body),
        phases: sample.phases,
        checks,
        extracted,
    }
}

fn step_name(ctx: &WorkerCtx, series: u32) -> String {
    ctx.plan
        .series
        .get(series as usize)
        .map(|k| k.name.clone())
        .unwrap_or_default()
}

/// A body for a trace: its first bytes, redacted and printable; `None` when empty.
fn shown(r: &Redactor, body: &[u8]) -> Option<BodyShown> {
    (!body.is_empty()).then(|| BodyShown {
        text: printable(&r.prefix(body, TRACE_BODY_BYTES)),
        total: body.len(),
    })
}

/// The sample of one failed request, redacted. `check` is the failing check with
/// what it saw, when a check (not the status or the transport) failed the request.
/// What a failure sample says made the request fail, besides its category.
struct Cause<'a> {
    /// The first failed check and what it saw.
    check: Option<(&'a CheckPlan, String)>,
    /// Why, in words: a transport failure's reason ([`pado_http::Exchange::reason`])
    /// or what a template rendered ([`RenderFault`]).
    reason: Option<std::borrow::Cow<'static, str>>,
}

fn failure_sample(
    ctx: &WorkerCtx,
    series: u32,
    request: &[u8],
    s: &RequestSample,
    body: &[u8],
    cause: Cause<'_>,
    end: Instant,
) -> FailureSample {
    let Cause { check, reason } = cause;
    let r = &ctx.plan.secrets.with_credentials_of(request);
    let (method, target) = request_line(request);
    let category = match s.error {
        Some(e) => e.as_str().to_string(),
        None if s.failed_by_check => "check_failed".to_string(),
        None => format!("http_{}", s.status),
    };
    let (check, actual) = match check {
        Some((c, seen)) => (
            ctx.plan.checks.get(check_id(c) as usize).cloned(),
            Some(r.text(seen.as_bytes())),
        ),
        None => (None, None),
    };
    FailureSample {
        step: step_name(ctx, series),
        category,
        second: ctx.second_at(end),
        method: String::from_utf8_lossy(method).into_owned(),
        url: r.text(target),
        status: s.status,
        body: printable(&r.prefix(body, BODY_PREFIX)),
        check,
        actual,
        reason: reason.map(|why| r.text(why.as_bytes())),
    }
}

fn check_id(c: &CheckPlan) -> u32 {
    match c {
        CheckPlan::Status { id, .. }
        | CheckPlan::BodyContains { id, .. }
        | CheckPlan::MaxDuration { id, .. }
        | CheckPlan::BodyMatches { id, .. }
        | CheckPlan::JsonExists { id, .. }
        | CheckPlan::JsonEquals { id, .. }
        | CheckPlan::Header { id, .. }
        | CheckPlan::Templated { id, .. } => *id,
    }
}

/// Longest value text a check description quotes.
const SEEN_MAX: usize = 120;

fn clip(s: &str) -> String {
    if s.chars().count() <= SEEN_MAX {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(SEEN_MAX).collect();
        t.push('…');
        t
    }
}

/// What a check saw, for a person (`got 401`, `got 7`, `no match in 120-byte body`):
/// called for failed checks being sampled and when debugging, never on the hot path.
fn seen(
    c: &CheckPlan,
    r: &ResponseView<'_>,
    error: Option<ErrorKind>,
    duration: Duration,
) -> String {
    if let Some(e) = error {
        return format!("no response ({e})");
    }
    let json_at = |path: &serde_json_path::JsonPath| match r.json() {
        None => "body is not JSON".to_string(),
        Some(v) => match path.query(v).first() {
            None => format!("nothing at {path}"),
            Some(got) => format!("got {}", clip(&got.to_string())),
        },
    };
    match c {
        CheckPlan::Status { .. } => format!("got {}", r.status),
        CheckPlan::BodyContains { needle, .. } => {
            if memchr::memmem::find(r.body, needle).is_some() {
                "found".to_string()
            } else {
                format!("not found in {}-byte body", r.body.len())
            }
        }
        CheckPlan::BodyMatches { re, .. } => match re.find(r.body) {
            Some(m) => format!("matched {:?}", clip(&String::from_utf8_lossy(m.as_bytes()))),
            None => format!("no match in {}-byte body", r.body.len()),
        },
        CheckPlan::MaxDuration { .. } => {
            format!("took {:.1} ms", duration.as_secs_f64() * 1000.0)
        }
        CheckPlan::JsonExists { path, .. } | CheckPlan::JsonEquals { path, .. } => json_at(path),
        CheckPlan::Header { name, .. } => match r.header(name) {
            Some(v) => format!("got {:?}", clip(&String::from_utf8_lossy(v))),
            None => format!("no {name} header"),
        },
        // Judged once rendered, as the plain check it stands for.
        CheckPlan::Templated { .. } => "not rendered".to_string(),
    }
}

fn evaluate(c: &CheckPlan, r: &ResponseView<'_>, ok: bool, duration: Duration) -> (u32, bool) {
    match c {
        CheckPlan::Status { id, set } => (*id, ok && set.contains(r.status)),
        CheckPlan::BodyContains { id, needle } => {
            (*id, ok && memchr::memmem::find(r.body, needle).is_some())
        }
        CheckPlan::MaxDuration { id, max } => (*id, ok && duration <= *max),
        CheckPlan::BodyMatches { id, re } => (*id, ok && re.is_match(r.body)),
        CheckPlan::JsonExists { id, path } => (
            *id,
            ok && r.json().is_some_and(|v| !path.query(v).is_empty()),
        ),
        CheckPlan::JsonEquals { id, path, expected } => (
            *id,
            ok && r.json().is_some_and(|v| {
                path.query(v)
                    .first()
                    .is_some_and(|got| json_matches(got, expected))
            }),
        ),
        CheckPlan::Header { id, name, contains } => (
            *id,
            ok && r
                .headers(name)
                .any(|v| memchr::memmem::find(v, contains).is_some()),
        ),
        // Judged once rendered ([`CheckPlan::with_value`]), never as is.
        CheckPlan::Templated { id, .. } => (*id, false),
    }
}

/// Equal as JSON, or the same text when one side is a string (`"3"` matches `3`).
fn json_matches(got: &serde_json::Value, expected: &serde_json::Value) -> bool {
    use serde_json::Value;
    if got == expected {
        return true;
    }
    match (got, expected) {
        (Value::String(a), b) | (b, Value::String(a)) if !b.is_string() => {
            a.as_str() == b.to_string().as_str()
        }
        _ => false,
    }
}

fn extract(
    src: &ExtractSource,
    r: &ResponseView<'_>,
    jar: &CookieJar,
    origin: usize,
) -> Option<Vec<u8>> {
    match src {
        ExtractSource::Json(path) => {
            let v = r.json()?;
            let got = path.query(v).first()?;
            Some(match got {
                serde_json::Value::String(s) => s.as_bytes().to_vec(),
                other => other.to_string().into_bytes(),
            })
        }
        ExtractSource::Regex(re) => {
            let caps = re.captures(r.body)?;
            let m = caps.get(1).or_else(|| caps.get(0))?;
            Some(m.as_bytes().to_vec())
        }
        ExtractSource::Header(name) => r.header(name).map(|v| v.to_vec()),
        ExtractSource::Cookie(name) => jar.get(origin, name).map(|v| v.as_bytes().to_vec()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hop(
        prev: &[u8],
        jar_at: std::ops::Range<usize>,
        status: u16,
        to: &str,
        same: bool,
    ) -> String {
        let url = url::Url::parse(to).unwrap();
        let mut out = Vec::new();
        hop_request(prev, &jar_at, status, &url, same, None, &mut out);
        String::from_utf8(out).unwrap()
    }

    const POST: &[u8] = b"POST /a HTTP/1.1\r\nHost: 127.0.0.1:9\r\nAuthorization: Bearer s\r\nContent-Type: application/json\r\nCookie: jar=1\r\nContent-Length: 2\r\n\r\n{}";

    #[test]
    fn a_hop_keeps_or_drops_method_body_and_credentials() {
        let jar = POST.windows(6).position(|w| w == b"Cookie").unwrap();
        let jar = jar..jar + b"Cookie: jar=1\r\n".len();
        // 307 on the same origin: everything but the jar's cookie line.
        let t = hop(POST, jar.clone(), 307, "http://127.0.0.1:9/b?x=1", true);
        assert_eq!(t, "POST /b?x=1 HTTP/1.1\r\nHost: 127.0.0.1:9\r\nAuthorization: Bearer s\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
        // 303 to another origin: a GET without body, body headers or credentials.
        let t = hop(POST, jar, 303, "http://localhost:8/c", false);
        assert_eq!(t, "GET /c HTTP/1.1\r\nHost: localhost:8\r\n\r\n");
    }

    #[test]
    fn only_http_locations_are_followed() {
        let req = b"GET /a/b?q=1 HTTP/1.1\r\n\r\n";
        let at =
            |loc: &str| redirect_to("http://127.0.0.1:9", req, loc.as_bytes()).map(String::from);
        assert_eq!(at("c").as_deref(), Some("http://127.0.0.1:9/a/c"));
        assert_eq!(at("/d#f").as_deref(), Some("http://127.0.0.1:9/d"));
        assert_eq!(at("https://x.test/").as_deref(), Some("https://x.test/"));
        assert_eq!(at("ftp://x.test/"), None);
        assert_eq!(at("http://"), None);
        assert_eq!(redirect_to("http://127.0.0.1:9", req, b"\xff"), None);
    }
}
