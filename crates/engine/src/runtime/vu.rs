//! A virtual user: its connections (one per origin), variables, feed cursors, cookie
//! jar, random generator and reused buffers; and what one iteration does with them.

use std::rc::Rc;
use std::time::{Duration, Instant};

use pado_metrics::failure::{printable, BODY_PREFIX};
use pado_metrics::{ErrorKind, FailureSample, Phases, RequestSample};

use crate::cookies::CookieJar;
use crate::data::FeedCursor;
use crate::http::{exchange, Conn, RequestRef};
use crate::plan::{CheckPlan, ExtractSource, RequestForm, RequestPlan, ScenarioPlan, StepPlan};
use crate::redact::{body_of, headers, request_line, Redactor};
use crate::render::RenderCtx;
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
pub enum IterationEnd {
    /// All steps ran.
    Completed,
    /// A graceful stop arrived between steps.
    Stopped,
}

/// One virtual user.
pub struct Vu {
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
}

fn us(d: Duration) -> u64 {
    d.as_micros().min(u64::MAX as u128) as u64
}

impl Vu {
    /// A VU with no connections yet (they open on first use). `id` is 1-based.
    pub fn new(ctx: Rc<WorkerCtx>, seed: u64, id: u64, cookies: bool) -> Self {
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
            id,
            iter: 0,
            ctx,
        }
    }

    /// Variables (for global setup, whose outputs seed every VU).
    pub fn into_vars(self) -> Vec<Option<Vec<u8>>> {
        self.vars
    }

    /// Drop connections that an interrupted exchange may have left mid-message.
    pub fn reset_connections(&mut self) {
        for c in &mut self.conns {
            *c = None;
        }
    }

    /// Random generator (think times).
    pub fn rng(&mut self) -> &mut fastrand::Rng {
        &mut self.rng
    }

    /// Pick the work entry by weight.
    pub fn pick(&mut self, sc: &ScenarioPlan) -> usize {
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
    pub async fn iteration(
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
    pub async fn run_once(&mut self, scope: &str, steps: &[StepPlan]) -> IterationEnd {
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

    /// Render a dynamic request into `self.req`.
    fn render(&mut self, scope: &str, req: &RequestPlan) {
        let RequestForm::Dynamic {
            prefix,
            target,
            fixed,
            headers,
            body,
            needs_length,
        } = &req.form
        else {
            return;
        };
        let plan = &self.ctx.plan;
        let mut rc = render_ctx!(self, plan, scope);
        let out = &mut self.req;
        out.clear();
        out.extend_from_slice(prefix);
        rc.render(target, out);
        out.extend_from_slice(fixed);
        for (name, value) in headers {
            out.extend_from_slice(name);
            rc.render(value, out);
            out.extend_from_slice(b"\r\n");
        }
        self.req_body.clear();
        if let Some(b) = body {
            rc.render(b, &mut self.req_body);
        }
        if self.cookies {
            self.jar.write_header(req.origin, out);
        }
        if *needs_length {
            out.extend_from_slice(b"Content-Length: ");
            crate::render::push_int(out, self.req_body.len() as i64);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&self.req_body);
    }

    async fn request(
        &mut self,
        scope: &str,
        step: &StepPlan,
        req: &RequestPlan,
        scheduled: Option<Instant>,
    ) {
        let ctx = self.ctx.clone();
        let origin = &ctx.plan.origins[req.origin];
        let t_start = Instant::now();
        let use_jar = self.cookies && !self.jar.is_empty();
        match &req.form {
            RequestForm::Static { bytes, head_end } if use_jar => {
                self.req.clear();
                self.req.extend_from_slice(&bytes[..*head_end]);
                self.jar.write_header(req.origin, &mut self.req);
                self.req.extend_from_slice(&bytes[*head_end..]);
            }
            RequestForm::Static { .. } => {}
            RequestForm::Dynamic { .. } => self.render(scope, req),
        }
        let bytes: &[u8] = match &req.form {
            RequestForm::Static { bytes, .. } if !use_jar => bytes,
            _ => &self.req,
        };
        // Debugging (`--http-debug`, `--once`) shows every head and body.
        let traced = ctx.observer.is_some();
        let body_kept = req.keep_body || traced;
        let keep_body = if body_kept {
            Some((&mut self.body, ctx.plan.max_body))
        } else {
            None
        };
        let keep_head = if req.keep_head || self.cookies || traced {
            Some((&mut self.head, req.keep_head || traced))
        } else {
            None
        };
        let ex = exchange(
            &mut self.conns[req.origin],
            origin,
            RequestRef {
                bytes,
                is_head: req.is_head,
                resend_safe: req.resend_safe,
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
            self.jar.absorb(req.origin, &view);
        }
        let mut failed = !ok_transport || !req.expect.contains(ex.status);
        let status_failed = failed;
        let mut first_failed = None;
        for c in &step.checks {
            let (id, ok) = evaluate(c, &view, ok_transport, duration);
            ctx.check(id, ok);
            failed |= !ok && step.checks_fail_request;
            if !ok && first_failed.is_none() {
                first_failed = Some(c);
            }
        }
        for e in &step.extract {
            let value = if ok_transport {
                extract(&e.source, &view, &self.jar, req.origin)
            } else {
                None
            };
            self.vars[e.var] = value;
        }
        let sample = RequestSample {
            status: ex.status,
            error: ex.error,
            failed,
            failed_by_check: failed && !status_failed,
            phases: Phases {
                blocked_us: scheduled.map_or(0, |s| us(t_start.saturating_duration_since(s))),
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
        };
        if failed {
            // Only failures pay for this, and only the first few per kind allocate.
            let code = match ex.error {
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
                    check.map(|c| (c, seen(c, &view, ex.error, duration))),
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
            let (method, target) = request_line(bytes);
            let checks = step
                .checks
                .iter()
                .map(|c| {
                    let (id, ok) = evaluate(c, &view, ok_transport, duration);
                    CheckOutcome {
                        name: plan.checks.get(id as usize).cloned().unwrap_or_default(),
                        ok,
                        actual: r.text(seen(c, &view, ex.error, duration).as_bytes()),
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
            obs.exchange(Trace {
                scope: scope.to_string(),
                step: step_name(&ctx, step.series),
                vu: self.id,
                method: String::from_utf8_lossy(method).into_owned(),
                url: r.text(
                    format!("{}{}", origin.label, String::from_utf8_lossy(target)).as_bytes(),
                ),
                request_headers: headers(bytes, r, full),
                request_body: shown(r, body_of(bytes)),
                status: ex.status,
                error: ex.error,
                failed,
                response_headers: headers(head, r, full),
                response_body: shown(r, body),
                phases: sample.phases,
                checks,
                extracted,
            });
        }
        let series = if step.tags.is_empty() {
            step.series
        } else {
            self.tag_buf.clear();
            let plan = &ctx.plan;
            let mut rc = render_ctx!(self, plan, scope);
            for (i, (_, t)) in step.tags.iter().enumerate() {
                if i > 0 {
                    self.tag_buf.push(0x1f);
                }
                rc.render(t, &mut self.tag_buf);
            }
            ctx.tagged_series(step.series, &step.tags, &self.tag_buf)
        };
        ctx.record(series, &sample, end);
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
fn failure_sample(
    ctx: &WorkerCtx,
    series: u32,
    request: &[u8],
    s: &RequestSample,
    body: &[u8],
    check: Option<(&CheckPlan, String)>,
    end: Instant,
) -> FailureSample {
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
        | CheckPlan::Header { id, .. } => *id,
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
