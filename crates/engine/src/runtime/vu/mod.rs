//! A virtual user: its connections (one per origin), variables, feed cursors, cookie
//! jar, random generator and reused buffers; and what one iteration does with them.
//!
//! By protocol: [`http`] (HTTP/1.1 and HTTP/2 steps, their redirects), [`send`]
//! (which connection), [`sse`] (an event stream's events), [`grpc`], [`websocket`]; every request ends in the one
//! finish path of [`finish`] (checks, failure sample, trace, record, raw record).

mod described;
mod judged;
mod redirects;

use std::rc::Rc;
use std::time::{Duration, Instant};

use pado_http::{Conn, Exchange};

use crate::cookies::CookieJar;
use crate::data::FeedCursor;
use crate::plan::{RequestForm, RequestPlan, ScenarioPlan, StepPlan};
use crate::render::RenderFault;

use super::worker::WorkerCtx;
use redirects::ExtraOrigin;
use send::ResponseBufs;

/// A [`crate::render::RenderCtx`] over a VU's fields (a macro, not a method, so the other fields
/// stay free to borrow while it lives).
macro_rules! render_ctx {
    ($vu:ident, $plan:expr, $scope:expr) => {
        $crate::render::RenderCtx {
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

mod finish;
mod grpc;
mod http;
mod script;
mod script_batch;
mod script_debug;
mod script_grpc;
mod script_net;
mod send;
mod sse;
#[cfg(test)]
mod tests;
mod websocket;

/// How an iteration ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum IterationEnd {
    /// All steps ran.
    Completed,
    /// A graceful stop arrived between steps.
    Stopped,
    /// A script's exception ended it (sampled, and counted among `iterations`
    /// as k6 counts it); the VU goes on.
    Failed,
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
    /// What answers leave behind (body, head, a failure's first bytes).
    resp: ResponseBufs,
    /// The current HTTP request's exchange: written in place by the exchange and
    /// read in place by the finish path, reused request after request (moving its
    /// ~200 bytes from future to future cost the hot path instructions).
    ex: Exchange,
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
    /// A scripted scenario's VU, made on its first iteration.
    script: Option<Box<dyn crate::script::ScriptVu>>,
    /// A script's WebSocket sessions and gRPC connections.
    net: script_net::ScriptNet,
    /// The buffers of a script's `http.batch` requests, reused batch after batch.
    batch_bufs: script_batch::LaneBufs,
}

/// A duration in whole microseconds, as samples hold them.
#[inline]
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
            resp: ResponseBufs::new(plan.max_body),
            ex: Exchange::default(),
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
            script: None,
            net: script_net::ScriptNet::default(),
            batch_bufs: Default::default(),
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
        self.batch_bufs.drop_connections();
        self.script_ws_cut();
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
        let end = match &sc.script_exec {
            Some(exec) => self.script_iteration(sc, exec, scheduled).await,
            None => {
                self.run_steps(&sc.name, &sc.entries[entry].steps, scheduled)
                    .await
            }
        };
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
/// than this fails with [`pado_metrics::ErrorKind::TooManyRedirects`].
pub(super) const MAX_REDIRECTS: u32 = 10;
