//! The collect loop: once a poll, the pods by the test's label; each segment's
//! start said, its result fetched once its run is over and the live view has its
//! last second, a pod that ended without one named missing with its reason. A
//! stop (Ctrl-C, or a threshold) the live loop could not deliver is delivered by
//! deleting the Job. Every wait is bounded: Pending past the pending timeout fails
//! the run naming the pod's reason; no result by the planned end plus the slack
//! (or the interrupt's grace) names the segment missing.

use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use tokio::sync::watch;

use super::objects::Objects;
use super::pods::{ended_reason, pending_reason, pod_index};
use super::{FlowError, FlowOptions};
use crate::live::Shared;
use crate::manifests;
use crate::spec::GeneratorSpec;
use pado_fleet::flow::{Collected, MissingSegment, Say};

/// One segment as the coordinator follows it.
#[derive(Default)]
struct Segment {
    /// Its start was said.
    announced: bool,
    done: bool,
}

/// The collect loop's state.
struct Collector<'a> {
    o: &'a Objects,
    spec: &'a GeneratorSpec,
    opts: &'a FlowOptions,
    say: &'a Say,
    shared: &'a Shared,
    n: u32,
    /// When the loop began: the pending timeout counts from here.
    started: Instant,
    /// The run's planned end on this clock; status is asked for from then on.
    planned_end: Instant,
    /// When a segment without a result is given up on.
    deadline: Instant,
    segs: Vec<Segment>,
    /// When each segment's run was first seen over, for the wait on its feed.
    over_at: Vec<Option<Instant>>,
    out: Collected,
    interrupted_at: Option<Instant>,
    job_deleted: bool,
    list_errors: u32,
}

/// Collects every segment's result into `opts.local_dir` (see the module's doc);
/// `start` is second 0 on this clock. Ends with what was collected, or an error
/// (a pod stuck Pending, the pods not listable, Ctrl-C twice).
pub(super) async fn collect(
    o: &Objects,
    spec: &GeneratorSpec,
    opts: &FlowOptions,
    mut interrupts: watch::Receiver<u32>,
    say: &Say,
    shared: &Shared,
    start: Instant,
) -> Result<Collected, FlowError> {
    let n = spec.generators;
    let planned_end = start + spec.planned;
    let mut c = Collector {
        o,
        spec,
        opts,
        say,
        shared,
        n,
        started: Instant::now(),
        planned_end,
        deadline: planned_end + spec.graceful_stop + opts.finish_timeout + opts.pending_timeout,
        segs: (0..n).map(|_| Segment::default()).collect(),
        over_at: vec![None; n as usize],
        out: Collected::default(),
        interrupted_at: None,
        job_deleted: false,
        list_errors: 0,
    };
    let lp = ListParams::default().labels(&manifests::pod_selector(spec));
    let result = loop {
        let presses = *interrupts.borrow_and_update();
        if presses >= 2 {
            break Err(FlowError::Interrupted);
        }
        let stopping = c.note_stop(presses);
        if (c.interrupted_at.is_some() || stopping) && !c.job_deleted {
            c.stop_the_unreachable().await;
        }
        if c.segs.iter().all(|s| s.done) || c.gave_up() {
            break Ok(());
        }
        let pods = match c.list(&lp).await {
            Ok(p) => p,
            Err(e) => break Err(e),
        };
        if let Some(stuck) = c.follow(&pods, stopping).await {
            break Err(stuck);
        }
        tokio::select! {
            _ = tokio::time::sleep(opts.poll) => {}
            changed = interrupts.changed() => {
                if changed.is_err() {
                    tokio::time::sleep(opts.poll).await;
                }
            }
        }
    };
    c.out.dirs.sort();
    c.out.missing.sort_by_key(|m| m.index);
    result.map(|()| c.out)
}

impl Collector<'_> {
    /// Takes in a first Ctrl-C and a stop the live loop sent; whether a stop (of
    /// either kind) is in effect.
    fn note_stop(&mut self, presses: u32) -> bool {
        if presses == 1 && self.interrupted_at.is_none() {
            (self.say)("interrupted: stopping the generators (Ctrl-C again to stop collecting)");
            self.interrupted_at = Some(Instant::now());
            self.out.interrupted = true;
        }
        let stopping = self.shared.lock().stopping.clone();
        if let Some(why) = &stopping {
            self.out.stopped.get_or_insert_with(|| why.clone());
        }
        self.interrupted_at.is_some() || stopping.is_some()
    }

    /// A stop (Ctrl-C, or a threshold) reaches the generators in the live view by
    /// `POST /stop`; once the live loop has sent it, one it could not reach (no pod
    /// running yet, out of the live view, the stop refused) is stopped by deleting
    /// the Job.
    async fn stop_the_unreachable(&mut self) {
        let unreachable = {
            let st = self.shared.lock();
            let pending = self.segs.iter().zip(&st.segs).any(|(seg, l)| {
                !seg.done
                    && l.reached
                    && !l.left_out
                    && !l.finished
                    && !l.stop_taken
                    && !l.stop_failed
            });
            let sent = (st.stopping.is_some() || st.live_over) && !pending;
            sent && self
                .segs
                .iter()
                .zip(&st.segs)
                .any(|(seg, l)| !seg.done && (l.stop_failed || l.left_out || !l.reached))
        };
        if unreachable {
            self.job_deleted = true;
            if let Err(e) = self.o.delete_job().await {
                (self.say)(&format!("warning: could not delete the Job: {e}"));
            }
        }
    }

    /// Past the interrupt's grace or the deadline: every segment still without a
    /// result is named missing, and the loop ends.
    fn gave_up(&mut self) -> bool {
        let now = Instant::now();
        let reason = if self
            .interrupted_at
            .is_some_and(|t| now > t + self.opts.interrupt_grace)
        {
            "interrupted before its result was collected".to_string()
        } else if now > self.deadline {
            format!(
                "no result {:?} after the planned end",
                self.spec.graceful_stop + self.opts.finish_timeout + self.opts.pending_timeout
            )
        } else {
            return false;
        };
        for (i, s) in self.segs.iter_mut().enumerate().filter(|(_, s)| !s.done) {
            s.done = true;
            self.out
                .missing
                .push(MissingSegment::new(i, self.n, &reason));
        }
        true
    }

    /// The test's pods; none on an error, until five in a row fail the run.
    async fn list(&mut self, lp: &ListParams) -> Result<Vec<Pod>, FlowError> {
        match self.o.pods.list(lp).await {
            Ok(p) => {
                self.list_errors = 0;
                Ok(p.items)
            }
            Err(e) => {
                self.list_errors += 1;
                if self.list_errors >= 5 {
                    return Err(FlowError::Watch(e));
                }
                Ok(Vec::new())
            }
        }
    }

    /// One look at every pod; a segment stuck past the pending timeout (its pod
    /// Pending, or none made for it) ends the run.
    async fn follow(&mut self, pods: &[Pod], stopping: bool) -> Option<FlowError> {
        let n = self.n;
        let mut seen = vec![false; n as usize];
        let mut stuck = None;
        for pod in pods {
            let Some(i) = pod_index(pod).filter(|i| *i < n) else {
                continue;
            };
            seen[i as usize] = true;
            if let Some(why) = self.follow_pod(i, pod, stopping).await {
                stuck = Some((i, why));
            }
        }
        let waited_out =
            self.started.elapsed() > self.opts.pending_timeout && self.interrupted_at.is_none();
        if stuck.is_none() && waited_out {
            if let Some(i) = (0..n as usize).find(|&i| !seen[i] && !self.segs[i].done) {
                stuck = Some((
                    i as u32,
                    "no pod was created for it (see `kubectl describe job`: quota, admission, or the Job was deleted)".into(),
                ));
            }
        }
        stuck.map(|(index, reason)| FlowError::Stuck {
            index,
            count: n,
            waited: self.opts.pending_timeout,
            reason,
        })
    }

    /// Segment `i`'s pod: its start said, its result taken once its run is over,
    /// or it named missing when the pod ended first. `Some(why)` when it has been
    /// Pending past the pending timeout.
    async fn follow_pod(&mut self, i: u32, pod: &Pod, stopping: bool) -> Option<String> {
        let (n, iu) = (self.n, i as usize);
        if self.segs[iu].done {
            return None;
        }
        let name = pod.metadata.name.clone().unwrap_or_default();
        self.shared.lock().segs[iu].pod = Some(name.clone());
        let phase = pod
            .status
            .as_ref()
            .and_then(|s| s.phase.clone())
            .unwrap_or_default();
        if phase == "Pending" || phase.is_empty() {
            let late =
                self.started.elapsed() > self.opts.pending_timeout && self.interrupted_at.is_none();
            return late.then(|| pending_reason(pod));
        }
        if !self.segs[iu].announced {
            self.segs[iu].announced = true;
            let node = pod
                .spec
                .as_ref()
                .and_then(|s| s.node_name.as_deref())
                .unwrap_or("a node");
            (self.say)(&format!(
                "[{i}/{n}] pod {name} {} on {node}",
                phase.to_lowercase()
            ));
        }
        let prefix = format!("[{i}/{n}]");
        let ask =
            phase == "Running" && (Instant::now() + self.opts.poll >= self.planned_end || stopping);
        if ask {
            if let Some(code) = self.o.status(&name, self.spec.port).await {
                self.take_result(i, &name, code).await;
            }
        } else if phase == "Succeeded" || phase == "Failed" {
            self.segs[iu].done = true;
            self.shared.lock().segs[iu].closed = true;
            self.out.missing.push(MissingSegment::new(
                iu,
                n,
                &format!(
                    "its pod {name} ended before its result was collected ({})",
                    ended_reason(pod)
                ),
            ));
            self.o
                .say_log_tail(&name, &prefix, self.opts.failed_log_lines, self.say)
                .await;
        }
        None
    }

    /// Segment `i`'s run is over with `code`: once the live view has its last
    /// second (or goes on without it, should its feed not end within the stall
    /// time), its result is fetched and, for a failed run, its log's tail said.
    async fn take_result(&mut self, i: u32, pod: &str, code: i32) {
        let (n, iu) = (self.n, i as usize);
        let over = *self.over_at[iu].get_or_insert_with(Instant::now);
        let live_done = self.shared.lock().segs[iu].finished
            || Instant::now() >= over + self.opts.live_stall_after;
        if !live_done {
            return;
        }
        let dest = self
            .opts
            .local_dir
            .join(pado_base::names::segment_dir(u64::from(i), None));
        self.segs[iu].done = true;
        self.shared.lock().segs[iu].closed = true;
        match self
            .o
            .fetch(pod, self.spec.port, &dest, self.opts.max_result_bytes)
            .await
        {
            Ok(got) => {
                (self.say)(&format!(
                    "[{i}/{n}] result collected ({} files, {} bytes), exit code {code}",
                    got.files, got.bytes
                ));
                self.out.dirs.push(dest);
                self.out.exit_codes.insert(i, code);
            }
            Err(reason) => self.out.missing.push(MissingSegment::new(
                iu,
                n,
                &format!("{reason} (its run exited with {code})"),
            )),
        }
        if code != 0 {
            let prefix = format!("[{i}/{n}]");
            self.o
                .say_log_tail(pod, &prefix, self.opts.failed_log_lines, self.say)
                .await;
        }
    }
}
