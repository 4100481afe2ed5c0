//! A virtual user: its connections (one per origin), its random generator and a reused
//! body buffer; and what one iteration of a scenario does with them.

use std::rc::Rc;
use std::time::{Duration, Instant};

use pado_metrics::{Phases, RequestSample};

use crate::http::{exchange, Conn, RequestRef};
use crate::plan::{CheckPlan, RequestPlan, ScenarioPlan, StepPlan, BODY_KEEP_CAP};

use super::worker::WorkerCtx;

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
    conns: Vec<Option<Conn>>,
    rng: fastrand::Rng,
    body: Vec<u8>,
}

fn us(d: Duration) -> u64 {
    d.as_micros().min(u64::MAX as u128) as u64
}

impl Vu {
    /// A VU with no connections yet (they open on first use).
    pub fn new(ctx: Rc<WorkerCtx>, seed: u64) -> Self {
        let n = ctx.plan.origins.len();
        Vu {
            ctx,
            conns: (0..n).map(|_| None).collect(),
            rng: fastrand::Rng::with_seed(seed),
            body: Vec::new(),
        }
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
        mut scheduled: Option<Instant>,
    ) -> IterationEnd {
        let steps = &sc.entries[entry].steps;
        for step in steps {
            if self.ctx.stopping.get() {
                return IterationEnd::Stopped;
            }
            if let Some(req) = &step.request {
                self.request(step, req, scheduled.take()).await;
            }
            if let Some(t) = &step.think {
                let pause = t.pause(&mut self.rng, Duration::ZERO);
                if !self.ctx.sleep_until(Instant::now() + pause).await {
                    return IterationEnd::Stopped;
                }
            }
        }
        IterationEnd::Completed
    }

    async fn request(&mut self, step: &StepPlan, req: &RequestPlan, scheduled: Option<Instant>) {
        let ctx = self.ctx.clone();
        let origin = &ctx.plan.origins[req.origin];
        let t_start = Instant::now();
        let keep_body = if req.keep_body {
            Some((&mut self.body, BODY_KEEP_CAP))
        } else {
            None
        };
        let ex = exchange(
            &mut self.conns[req.origin],
            origin,
            RequestRef {
                bytes: &req.bytes,
                is_head: req.is_head,
                timeout: req.timeout,
                keep_body,
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
        let mut failed = ex.error.is_some() || !req.expect.contains(ex.status);
        let status_failed = failed;
        for c in &step.checks {
            let (id, ok) = match c {
                CheckPlan::Status { id, set } => {
                    (*id, ex.error.is_none() && set.contains(ex.status))
                }
                CheckPlan::BodyContains { id, needle } => (
                    *id,
                    ex.error.is_none() && memchr::memmem::find(&self.body, needle).is_some(),
                ),
                CheckPlan::MaxDuration { id, max } => (*id, ex.error.is_none() && duration <= *max),
            };
            ctx.check(id, ok);
            failed |= !ok;
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
        };
        ctx.record(step.series, &sample, end);
    }
}
