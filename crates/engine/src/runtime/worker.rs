//! One worker thread: a current-thread tokio runtime running its share of VUs, with
//! its own measurements. Nothing here is shared with other threads except the
//! once-a-second [`Interval`] sent to the aggregator and the stop flag it polls.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;
use pado_metrics::failure::SAMPLES_PER_KIND;
use pado_metrics::raw::{RawLink, RawProtocol, RawRecord, RawTap};
use pado_metrics::{
    CheckCounts, ErrorKind, FailureSample, Interval, LagHistogram, ProtocolCounts, RequestSample,
    ScenarioStats, SeriesKey, SeriesStats, WorkerMessage,
};
use tokio::sync::Notify;

mod custom_metrics;
mod script_urls;

use super::self_stats::SelfMeter;
use super::steering::clock::{ClockMap, HeldSpan};
use super::steering::LoadControl;
use crate::plan::RunPlan;
use crate::render::Compiled;
use crate::trace::Observer;

/// Most distinct tag combinations one step may produce per worker before further
/// values are folded into `~other`: unbounded tag values (ids, timestamps) must not
/// turn into unbounded memory. The aggregator applies the same cap per step across
/// workers (see [`pado_metrics::TAG_SERIES_CAP`]), which is the one users see.
pub(super) use pado_metrics::TAG_SERIES_CAP;

/// Run state shared by the CLI and every worker: 0 running, 1 stop gracefully,
/// 2 abort now.
pub type StopState = Arc<AtomicU8>;
/// [`StopState`] value: keep going.
pub const RUNNING: u8 = 0;
/// [`StopState`] value: no new iterations or requests; in-flight ones finish.
pub const STOPPING: u8 = 1;
/// [`StopState`] value: cut everything now.
pub const ABORT: u8 = 2;

/// Measurements of the current second on this thread.
pub(super) struct WorkerMetrics {
    second: u32,
    /// When the current second ends (`t0` + `second` + 1 s): whether a request
    /// that ended at some instant is still in the current second (nearly all are)
    /// is one comparison of instants, not a subtraction and a division.
    next_at: Instant,
    series: Vec<SeriesStats>,
    scenarios: Vec<ScenarioStats>,
    flows: Vec<ScenarioStats>,
    checks: Vec<CheckCounts>,
    /// Event-loop probe wake-ups of the current second.
    lag: LagHistogram,
    /// Failed-request samples kept since the last flush.
    failures: Vec<FailureSample>,
    /// Requests by HTTP version and connections opened in the current second.
    protocols: ProtocolCounts,
    /// A script's checks, named as it runs them (see [`WorkerCtx::script_check`]).
    script_checks: Vec<(String, CheckCounts)>,
    /// A script's own metrics (see [`WorkerCtx::script_metric`]).
    custom: Vec<pado_metrics::CustomStats>,
}

/// Everything the tasks of one worker share (single-threaded: `Rc`, `Cell`, `RefCell`).
pub(super) struct WorkerCtx {
    /// Worker index.
    pub id: usize,
    /// The run.
    pub plan: Arc<RunPlan>,
    /// Run start (second 0 begins here).
    pub t0: Instant,
    metrics: RefCell<WorkerMetrics>,
    tx: Sender<WorkerMessage>,
    /// VUs currently active on this worker.
    vus_active: Cell<u32>,
    /// Most VUs active at once during the current second.
    vus_peak: Cell<u32>,
    /// VUs allocated on this worker.
    pub vus_alloc: Cell<u32>,
    /// Set once a graceful stop is requested.
    pub stopping: Cell<bool>,
    /// Woken when `stopping` becomes true.
    pub stop_notify: Notify,
    /// Woken when in-flight work must be cut, and when the plan's clock changed
    /// (see [`WorkerCtx::interrupted`]).
    pub abort_notify: Notify,
    /// Set once aborting.
    pub aborted: Cell<bool>,
    /// When this worker first saw the order to stop: in-flight iterations get at
    /// most the graceful stop from then, not from the planned end.
    pub stop_seen_at: Cell<Option<Instant>>,
    /// Variables every VU starts with (the global setup's outputs).
    pub initial_vars: Vec<Option<Vec<u8>>>,
    /// Tagged series: (base series, rendered tag values) to local series index.
    tagged: RefCell<HashMap<Vec<u8>, u32>>,
    /// Distinct tag combinations per base series, for the cap.
    tagged_count: RefCell<HashMap<u32, usize>>,
    /// Scratch key for lookups.
    tag_key: RefCell<Vec<u8>>,
    /// The thread's own CPU and run-queue clock, read once per closed second; only on
    /// load workers ([`WorkerCtx::measure_self`]), not on the setup/teardown runner.
    meter: RefCell<Option<SelfMeter>>,
    /// Failure samples taken so far per (step series, category): at most
    /// [`SAMPLES_PER_KIND`] each for the whole run. Touched only by failed requests.
    sampled: RefCell<HashMap<(u32, FailureKey), u8>>,
    /// Who sees each exchange (`--http-debug`, `--once`); `None` in a load run,
    /// where the hot path pays one branch for it.
    pub observer: Option<Arc<dyn Observer>>,
    /// Skip think times (`--once`: a script check, not a load).
    pub skip_think: bool,
    /// The HTTP/2 connections this worker's VUs share, per plan origin (`None` for
    /// an origin spoken with HTTP/1.1, where each VU owns its connection).
    pub h2: Vec<Option<pado_http::H2Pool>>,
    /// Raw per-request records (`--output raw-json=FILE`): `None` unless asked for,
    /// so without it each request pays one branch.
    raw: Option<RefCell<RawTap>>,
    /// An instant and the same moment in µs since the Unix epoch: raw records'
    /// wall-clock times are computed from it, not read per request.
    wall_anchor: (Instant, u64),
    /// The load as steered from outside (`None`: nobody steers this run).
    control: std::cell::OnceCell<Arc<LoadControl>>,
    /// This worker's copy of the plan's clock, taken when its generation moves.
    clock: RefCell<Arc<ClockMap>>,
    /// The holds of that clock, computed once per change.
    holds: RefCell<Vec<HeldSpan>>,
    /// The clock generation copied last.
    clock_seen: Cell<u64>,
    /// Whether the plan's clock was ever held or skipped: until then schedule time
    /// is real time, and reading it costs one branch.
    clock_moved: Cell<bool>,
    /// Woken when this worker copied a changed clock, so that a task sleeping until
    /// a moment of the plan sleeps until its new real time.
    pub clock_notify: Notify,
    /// A script's series and checks by name, created as its requests name them.
    script_names: RefCell<ScriptNames>,
    /// The script's `setup()` return value (JSON), handed to each iteration.
    pub script_data: RefCell<Option<Arc<str>>>,
    /// One permit: the scripted VUs of this worker make their JavaScript
    /// contexts one at a time, in the order they asked, each followed by a
    /// turn of the worker's loop (see `Vu::script_iteration`), so that the VUs
    /// already made send their requests while the others are still being made,
    /// instead of all of the worker's VUs being made before any request leaves.
    pub(super) script_turns: tokio::sync::Semaphore,
}

/// A script's series and checks on this worker: names are known only when its
/// requests and checks run, so each is interned on first use (capped like tags).
#[derive(Default)]
struct ScriptNames {
    series: HashMap<String, u32>,
    checks: HashMap<String, u32>,
    /// Scratch for a series' key (name, group, tags), reused per request.
    key: String,
    /// Custom metrics: see [`custom_metrics::CustomNames`].
    custom: custom_metrics::CustomNames,
    /// The script's request URLs, parsed once while kept.
    urls: script_urls::ScriptUrls,
}

/// Where a worker context's figures and traces go: the aggregator, the observer
/// that sees each exchange (`--http-debug`, `--once`), the raw per-request file.
/// Every runner of a run (its workers, the setup's and the teardown's) gets a
/// clone.
#[derive(Clone)]
pub(super) struct Outlets {
    /// The aggregator's channel.
    pub tx: Sender<WorkerMessage>,
    /// Sees every exchange, when asked for.
    pub observer: Option<Arc<dyn Observer>>,
    /// Raw per-request records, when asked for.
    pub raw: Option<RawLink>,
}

/// The category a failed request's sample is counted in: each step keeps at most
/// [`SAMPLES_PER_KIND`] samples per category, so one flood of timeouts does not
/// hide the first `http_500`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum FailureKey {
    /// No usable answer: the transport (or a template, a redirect, a gRPC code).
    Error(ErrorKind),
    /// An answer whose status the step does not accept (`http_<status>`).
    Status(u16),
    /// An accepted answer that failed a check (`check_failed`).
    Check,
}

impl FailureKey {
    /// The category of `sample`, failed by its transport or status
    /// (`status_failed`) or else by a check.
    #[inline]
    pub(super) fn of(sample: &RequestSample, status_failed: bool) -> FailureKey {
        match sample.error {
            Some(e) => FailureKey::Error(e),
            None if status_failed => FailureKey::Status(sample.status),
            None => FailureKey::Check,
        }
    }
}

/// A step's tag names (with their templates) and its rendered values joined by 0x1f.
pub(super) type RenderedTags<'a> = (&'a [(String, Compiled)], &'a [u8]);

/// What a raw record says beyond the request's sample (see [`WorkerCtx::raw`]).
pub(super) struct RawRequest<'a> {
    /// The step's series (its name).
    pub step: u32,
    /// The scenario, or `setup`/`teardown`.
    pub scope: &'a str,
    /// The VU and its iteration.
    pub vu: u64,
    /// See [`RawRequest::vu`].
    pub iter: u64,
    /// The method.
    pub method: &'a [u8],
    /// The URL in the parts it is made of, joined as they are: the origin
    /// (`http://host:port`) and the target as sent (path and query), or an absolute
    /// URL alone; parts so that no caller builds the URL itself per request.
    pub url: [&'a [u8]; 3],
    /// The step's tag names and their rendered values (joined by 0x1f), if any.
    pub tags: Option<RenderedTags<'a>>,
    /// HTTP version or gRPC.
    pub protocol: RawProtocol,
    /// An LLM stream's figures (`sse: {llm: true}` steps only).
    pub llm: Option<pado_metrics::raw::RawLlm>,
}

impl WorkerCtx {
    /// A context for worker `id`, sending to `outlets`.
    pub(super) fn new(
        id: usize,
        plan: Arc<RunPlan>,
        t0: Instant,
        outlets: Outlets,
        initial_vars: Vec<Option<Vec<u8>>>,
    ) -> Rc<Self> {
        Self::with_options(id, plan, t0, outlets, initial_vars, false)
    }

    /// [`WorkerCtx::new`], optionally skipping think times (`--once`).
    pub(super) fn with_options(
        id: usize,
        plan: Arc<RunPlan>,
        t0: Instant,
        outlets: Outlets,
        initial_vars: Vec<Option<Vec<u8>>>,
        skip_think: bool,
    ) -> Rc<Self> {
        let Outlets { tx, observer, raw } = outlets;
        let metrics = WorkerMetrics {
            second: 0,
            next_at: t0 + Duration::from_secs(1),
            series: fresh_series(&plan),
            scenarios: fresh_scenarios(&plan),
            flows: plan.flows.iter().map(ScenarioStats::new).collect(),
            checks: vec![CheckCounts::default(); plan.checks.len()],
            lag: LagHistogram::default(),
            failures: Vec::new(),
            protocols: ProtocolCounts::default(),
            script_checks: Vec::new(),
            custom: Vec::new(),
        };
        Rc::new(WorkerCtx {
            id,
            t0,
            metrics: RefCell::new(metrics),
            tx,
            vus_active: Cell::new(0),
            vus_peak: Cell::new(0),
            vus_alloc: Cell::new(0),
            stopping: Cell::new(false),
            stop_notify: Notify::new(),
            abort_notify: Notify::new(),
            aborted: Cell::new(false),
            stop_seen_at: Cell::new(None),
            initial_vars,
            tagged: RefCell::new(HashMap::new()),
            tagged_count: RefCell::new(HashMap::new()),
            tag_key: RefCell::new(Vec::new()),
            meter: RefCell::new(None),
            sampled: RefCell::new(HashMap::new()),
            observer,
            skip_think,
            h2: plan
                .origins
                .iter()
                .map(|o| {
                    o.protocol
                        .pooled(o.tls.is_some())
                        .then(|| pado_http::H2Pool::new(plan.max_streams))
                })
                .collect(),
            plan,
            raw: raw.map(|l| RefCell::new(RawTap::new(l))),
            wall_anchor: {
                let now = Instant::now();
                let unix = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_micros() as u64);
                (now, unix)
            },
            control: std::cell::OnceCell::new(),
            clock: RefCell::new(Arc::new(ClockMap::default())),
            holds: RefCell::new(Vec::new()),
            clock_seen: Cell::new(0),
            clock_moved: Cell::new(false),
            clock_notify: Notify::new(),
            script_turns: tokio::sync::Semaphore::new(1),
            script_names: RefCell::new(ScriptNames::default()),
            script_data: RefCell::new(None),
        })
    }

    /// The series a script's request named `name` is recorded under (k6's `name`
    /// tag, the URL by default), tagged with its `group` path when it has one and
    /// with its other `tags`; created on first use. Past [`TAG_SERIES_CAP`] series
    /// on this worker, further names go to `~other`.
    pub(super) fn script_series(
        &self,
        name: &str,
        group: Option<&str>,
        tags: &[(String, String)],
    ) -> u32 {
        let mut names = self.script_names.borrow_mut();
        let mut key = std::mem::take(&mut names.key);
        key.clear();
        key.push_str(name);
        if let Some(g) = group {
            key.push('\u{1f}');
            key.push_str(g);
        }
        for (k, v) in tags {
            key.push('\u{1e}');
            key.push_str(k);
            key.push('\u{1f}');
            key.push_str(v);
        }
        if let Some(&i) = names.series.get(key.as_str()) {
            names.key = key;
            return i;
        }
        let (key, name) = if names.series.len() >= TAG_SERIES_CAP {
            names.key = key;
            ("~other".to_string(), "~other")
        } else {
            (key, name)
        };
        if let Some(&i) = names.series.get(&key) {
            return i;
        }
        let mut series_tags = Vec::new();
        if name != "~other" {
            if let Some(g) = group {
                series_tags.push(("group".to_string(), g.to_string()));
            }
            series_tags.extend(tags.iter().filter(|(k, _)| k != "group").cloned());
            series_tags.sort();
        }
        let mut m = self.metrics.borrow_mut();
        m.series.push(SeriesStats::new(SeriesKey {
            name: name.to_string(),
            tags: series_tags,
        }));
        let idx = (m.series.len() - 1) as u32;
        names.series.insert(key, idx);
        idx
    }

    /// Count a script's check named `name` (k6's `check`), created on first use.
    /// A script request's URL (see [`script_urls::ScriptUrls::get`]): parsed
    /// once while this worker keeps it.
    pub(super) fn script_url(&self, text: &str) -> Option<url::Url> {
        self.script_names.borrow_mut().urls.get(text)
    }

    pub(super) fn script_check(&self, name: &str, ok: bool) {
        let mut names = self.script_names.borrow_mut();
        let mut m = self.metrics.borrow_mut();
        let idx = match names.checks.get(name) {
            Some(&i) => i as usize,
            None => {
                m.script_checks
                    .push((name.to_string(), CheckCounts::default()));
                let i = m.script_checks.len() - 1;
                names.checks.insert(name.to_string(), i as u32);
                i
            }
        };
        let c = &mut m.script_checks[idx].1;
        if ok {
            c.passes += 1;
        } else {
            c.fails += 1;
        }
    }

    /// Steer this worker's load with `control` (set once, before any VU runs).
    pub(super) fn steer_with(&self, control: Arc<LoadControl>) {
        let _ = self.control.set(control);
    }

    /// Whether the plan's clock can move (the run is steered).
    #[inline]
    pub(super) fn steered(&self) -> bool {
        self.control.get().is_some()
    }

    /// Called by the clock task every 20 ms: move the running ramps, and copy the
    /// plan's clock when it changed (waking what sleeps until a moment of it).
    pub(super) fn follow_control(&self, now: Instant) {
        let Some(c) = self.control.get() else {
            return;
        };
        c.tick(now);
        let g = c.clock_generation();
        if g != self.clock_seen.get() {
            self.clock_seen.set(g);
            let clock = c.clock();
            *self.holds.borrow_mut() = clock.holds();
            *self.clock.borrow_mut() = clock;
            self.clock_moved.set(true);
            self.clock_notify.notify_waiters();
            // In-flight iterations' deadlines moved with the clock.
            self.abort_notify.notify_waiters();
        }
    }

    /// How many clock changes this worker has seen (a VU compares it to know its
    /// deadlines moved).
    #[inline]
    pub(super) fn clock_generation(&self) -> u64 {
        self.clock_seen.get()
    }

    /// Where the plan is at `now`: time since second 0, less what was held, plus
    /// what was skipped.
    #[inline]
    pub(super) fn schedule_at(&self, now: Instant) -> Duration {
        let real = now.saturating_duration_since(self.t0);
        if self.clock_moved.get() {
            self.clock.borrow().schedule_at(real)
        } else {
            real
        }
    }

    /// Whether the plan is still before schedule time `sched` at `now`
    /// (`schedule_at(now) < sched`). `unmoved_at` is `t0 + sched`, computed once by
    /// the caller: until the plan's clock first moves, schedule time is real time
    /// and the answer is one comparison of instants (a closed VU asks once per
    /// iteration), not a subtraction.
    #[inline]
    pub(super) fn before_schedule(
        &self,
        now: Instant,
        sched: Duration,
        unmoved_at: Instant,
    ) -> bool {
        if self.clock_moved.get() {
            self.schedule_at(now) < sched
        } else {
            now < unmoved_at
        }
    }

    /// The instant the plan reaches schedule time `sched` (as the clock stands).
    #[inline]
    pub(super) fn real_at(&self, sched: Duration) -> Instant {
        if self.clock_moved.get() {
            self.t0 + self.clock.borrow().real_at(sched)
        } else {
            self.t0 + sched
        }
    }

    /// Whether schedule time `sched` was skipped over (its arrivals are not run).
    pub(super) fn skipped(&self, sched: Duration) -> bool {
        self.clock_moved.get() && self.clock.borrow().skipped(sched)
    }

    /// The hold the plan is in at `now`, if any.
    pub(super) fn hold_at(&self, now: Instant) -> Option<HeldSpan> {
        if !self.clock_moved.get() {
            return None;
        }
        let real = now.saturating_duration_since(self.t0);
        self.holds
            .borrow()
            .iter()
            .rev()
            .find(|h| h.from <= real && real < h.until)
            .copied()
    }

    /// Sleep until the plan reaches schedule time `sched`, following holds and
    /// skips made meanwhile; false early if a graceful stop is requested.
    pub(super) async fn sleep_until_schedule(&self, sched: Duration) -> bool {
        loop {
            if self.stopping.get() {
                return false;
            }
            let at = self.real_at(sched);
            if Instant::now() >= at {
                return true;
            }
            tokio::select! {
                _ = tokio::time::sleep_until(at.into()) => {}
                _ = self.stop_notify.notified() => return false,
                _ = self.clock_notify.notified(), if self.steered() => {}
            }
        }
    }

    /// Whether raw records are asked for: callers build a [`RawRequest`] only then.
    #[inline]
    pub(super) fn raw_on(&self) -> bool {
        self.raw.is_some()
    }

    /// Keep a raw record of a request that ended at `end` (only with a raw output:
    /// check [`WorkerCtx::raw_on`] first). Copies its text into the worker's batch,
    /// allocating nothing once the batch has grown.
    pub(super) fn raw(&self, r: &RawRequest<'_>, sample: &RequestSample, end: Instant) {
        let Some(tap) = &self.raw else {
            return;
        };
        let mut tap = tap.borrow_mut();
        let b = tap.batch();
        let scenario = b.push_text(&[r.scope.as_bytes()]);
        let method = b.push_text(&[r.method]);
        let url = b.push_text(&r.url);
        let tags = match r.tags {
            Some((names, values)) => {
                let start = b.text.len();
                for ((name, _), value) in names.iter().zip(values.split(|&c| c == 0x1f)) {
                    b.text.extend_from_slice(name.as_bytes());
                    b.text.push(0x1e);
                    b.text.extend_from_slice(value);
                    b.text.push(0x1f);
                }
                b.span_since(start)
            }
            None => pado_metrics::raw::Span::default(),
        };
        let (anchor, anchor_us) = self.wall_anchor;
        let at_us = anchor_us
            + end
                .saturating_duration_since(anchor)
                .as_micros()
                .min(u64::MAX as u128) as u64;
        tap.push(RawRecord {
            at_us,
            step: r.step,
            vu: r.vu,
            iter: r.iter,
            status: sample.status,
            error: sample.error,
            failed: sample.failed,
            failed_by_check: sample.failed_by_check,
            protocol: r.protocol,
            bytes_sent: sample.bytes_sent,
            bytes_received: sample.bytes_received,
            phases: sample.phases,
            scenario,
            method,
            url,
            tags,
            llm: r.llm,
        });
    }

    /// Whether a failure of step series `series` in category `key` should be
    /// sampled; counts it when so. Called only for failed requests.
    pub(super) fn want_failure_sample(&self, series: u32, key: FailureKey) -> bool {
        let mut m = self.sampled.borrow_mut();
        let n = m.entry((series, key)).or_insert(0);
        if usize::from(*n) >= SAMPLES_PER_KIND {
            return false;
        }
        *n += 1;
        true
    }

    /// Keep a failure sample; it goes to the aggregator with the next flush.
    pub(super) fn failure_sample(&self, s: FailureSample) {
        self.metrics.borrow_mut().failures.push(s);
    }

    /// Second of the run `at` falls in.
    pub(super) fn second_at(&self, at: Instant) -> u32 {
        self.second_of(at)
    }

    /// Measure this worker's own CPU and run-queue wait from now on and send them,
    /// with the event-loop lag its probe records ([`WorkerCtx::record_lag`]), with
    /// every second. Call on the worker's own thread: the clock reads the calling
    /// thread's times. Without it (the setup/teardown runner) no figures are sent.
    pub(super) fn measure_self(&self) {
        *self.meter.borrow_mut() = Some(SelfMeter::start());
    }

    /// The event-loop probe woke `late` after it was due, at `now`.
    pub(super) fn record_lag(&self, late: Duration, now: Instant) {
        self.roll_to(now);
        let us = late.as_micros().min(u64::MAX as u128) as u64;
        self.metrics.borrow_mut().lag.record(us);
    }

    fn second_of(&self, at: Instant) -> u32 {
        (at.saturating_duration_since(self.t0).as_secs()).min(u32::MAX as u64) as u32
    }

    /// Move on to the second `at` falls in, sending the finished ones.
    fn roll_to(&self, at: Instant) {
        let mut m = self.metrics.borrow_mut();
        if at < m.next_at {
            return;
        }
        let sec = self.second_of(at);
        if sec > m.second {
            self.send_current(&mut m);
            m.second = sec;
        }
        m.next_at = self.t0 + Duration::from_secs(u64::from(m.second) + 1);
    }

    fn send_current(&self, m: &mut WorkerMetrics) {
        let series: Vec<SeriesStats> = m
            .series
            .iter_mut()
            .filter(|s| !s.is_empty())
            .map(|s| {
                let key = s.key.clone();
                std::mem::replace(s, SeriesStats::new(key))
            })
            .collect();
        let take = |v: &mut Vec<ScenarioStats>| -> Vec<ScenarioStats> {
            v.iter_mut()
                .filter(|s| !s.is_empty())
                .map(|s| {
                    let name = s.name.clone();
                    std::mem::replace(s, ScenarioStats::new(name))
                })
                .collect()
        };
        let scenarios = take(&mut m.scenarios);
        let flows = take(&mut m.flows);
        let mut checks: Vec<(String, CheckCounts)> = m
            .checks
            .iter_mut()
            .enumerate()
            .filter(|(_, c)| c.passes + c.fails > 0)
            .map(|(i, c)| (self.plan.checks[i].clone(), std::mem::take(c)))
            .collect();
        checks.extend(
            m.script_checks
                .iter_mut()
                .filter(|(_, c)| c.passes + c.fails > 0)
                .map(|(n, c)| (n.clone(), std::mem::take(c))),
        );
        let custom = custom_metrics::take_second(&mut m.custom);
        if !m.failures.is_empty() {
            let _ = self
                .tx
                .send(WorkerMessage::Failures(std::mem::take(&mut m.failures)));
        }
        if let Some(tap) = &self.raw {
            tap.borrow_mut().flush();
        }
        let lag = std::mem::take(&mut m.lag);
        let generator = self.meter.borrow_mut().as_mut().map(|mt| mt.interval(lag));
        let _ = self.tx.send(WorkerMessage::Interval(Interval {
            worker: self.id,
            second: m.second,
            vus: self.vus_peak.get(),
            vus_max: self.vus_alloc.get(),
            series,
            scenarios,
            flows,
            checks,
            generator,
            protocols: std::mem::take(&mut m.protocols),
            custom,
        }));
        self.vus_peak.set(self.vus_active.get());
    }

    /// A VU became active (started a window or an iteration) at `now`.
    pub(super) fn vu_started(&self, now: Instant) {
        self.roll_to(now);
        let n = self.vus_active.get() + 1;
        self.vus_active.set(n);
        if self.plan.script.is_some() {
            self.plan.script_state.vu_active(true);
        }
        self.vus_peak.set(self.vus_peak.get().max(n));
    }

    /// A VU became idle at `now`.
    pub(super) fn vu_stopped(&self, now: Instant) {
        self.roll_to(now);
        self.vus_active.set(self.vus_active.get().saturating_sub(1));
        if self.plan.script.is_some() {
            self.plan.script_state.vu_active(false);
        }
    }

    /// Record one request completed at `end`.
    #[inline]
    pub(super) fn record(&self, series: u32, sample: &RequestSample, end: Instant) {
        self.roll_to(end);
        let mut m = self.metrics.borrow_mut();
        m.protocols.record(sample);
        if let Some(s) = m.series.get_mut(series as usize) {
            s.record(sample);
        }
    }

    /// Record one server-streaming gRPC call (a request of its step, and a stream
    /// with `msgs` messages) completed at `end`.
    pub(super) fn record_grpc_stream(
        &self,
        series: u32,
        sample: &RequestSample,
        msgs: u64,
        sent: u64,
        end: Instant,
    ) {
        self.record(series, sample, end);
        if let Some(s) = self.metrics.borrow_mut().series.get_mut(series as usize) {
            s.record_grpc_stream(msgs, sent);
        }
    }

    /// Record one event stream of step series `series` ended at `end`, and the
    /// gaps between its tokens (µs).
    pub(super) fn record_sse(
        &self,
        series: u32,
        (stream, input_tokens): (&pado_metrics::SseStream, Option<u64>),
        gaps: &[u64],
        end: Instant,
    ) {
        self.roll_to(end);
        let mut m = self.metrics.borrow_mut();
        if let Some(s) = m.series.get_mut(series as usize) {
            s.record_sse(stream);
            for &g in gaps {
                s.record_llm_itl(g);
            }
            if let Some(n) = input_tokens.filter(|_| stream.llm) {
                s.record_llm_input_tokens(n);
            }
        }
    }

    /// Record one WebSocket session of step series `series`, ended at `end`.
    pub(super) fn record_ws(&self, series: u32, session: &pado_metrics::WsSession, end: Instant) {
        self.roll_to(end);
        let mut m = self.metrics.borrow_mut();
        m.protocols.record_ws(session);
        if let Some(s) = m.series.get_mut(series as usize) {
            s.record_ws(session);
        }
    }

    /// Record one message latency (µs) of step series `series`, measured at `at`.
    pub(super) fn record_ws_latency(&self, series: u32, latency_us: u64, at: Instant) {
        self.roll_to(at);
        let mut m = self.metrics.borrow_mut();
        if let Some(s) = m.series.get_mut(series as usize) {
            s.record_ws_latency(latency_us);
        }
    }

    /// Record a check result.
    #[inline]
    pub(super) fn check(&self, id: u32, ok: bool) {
        let mut m = self.metrics.borrow_mut();
        if let Some(c) = m.checks.get_mut(id as usize) {
            if ok {
                c.passes += 1;
            } else {
                c.fails += 1;
            }
        }
    }

    /// The series of a request of step series `base` with rendered tag values
    /// (`values` joined by 0x1f), created on first use.
    pub(super) fn tagged_series(
        &self,
        base: u32,
        tags: &[(String, Compiled)],
        values: &[u8],
    ) -> u32 {
        let mut key = self.tag_key.borrow_mut();
        key.clear();
        key.extend_from_slice(&base.to_le_bytes());
        key.extend_from_slice(values);
        if let Some(&i) = self.tagged.borrow().get(key.as_slice()) {
            return i;
        }
        let mut counts = self.tagged_count.borrow_mut();
        let n = counts.entry(base).or_insert(0);
        let over = *n >= TAG_SERIES_CAP;
        if over {
            key.truncate(4);
            key.extend_from_slice(b"~other");
            if let Some(&i) = self.tagged.borrow().get(key.as_slice()) {
                return i;
            }
        } else {
            *n += 1;
        }
        let text = String::from_utf8_lossy(values);
        let mut pairs: Vec<(String, String)> = tags
            .iter()
            .zip(text.split('\u{1f}'))
            .map(|((k, _), v)| {
                let v = if over {
                    "~other".to_string()
                } else {
                    v.to_string()
                };
                (k.clone(), v)
            })
            .collect();
        pairs.sort();
        let name = self
            .plan
            .series
            .get(base as usize)
            .map(|k| k.name.clone())
            .unwrap_or_default();
        let mut m = self.metrics.borrow_mut();
        m.series
            .push(SeriesStats::new(SeriesKey { name, tags: pairs }));
        let idx = (m.series.len() - 1) as u32;
        self.tagged.borrow_mut().insert(key.clone(), idx);
        idx
    }

    /// A group of steps took `took`.
    pub(super) fn group(&self, id: usize, took: Duration, end: Instant) {
        self.roll_to(end);
        let mut m = self.metrics.borrow_mut();
        if let Some(f) = m.flows.get_mut(id) {
            f.iterations += 1;
            f.iteration_duration.record(took.as_micros() as u64);
        }
    }

    /// Record an iteration's end (and its named flow's, if any).
    pub(super) fn iteration(
        &self,
        scenario: usize,
        flow: Option<usize>,
        took: Option<Duration>,
        end: Instant,
    ) {
        self.roll_to(end);
        let mut m = self.metrics.borrow_mut();
        let m = &mut *m;
        let flow = flow.and_then(|f| m.flows.get_mut(f));
        for s in std::iter::once(&mut m.scenarios[scenario]).chain(flow) {
            match took {
                Some(d) => {
                    s.iterations += 1;
                    s.iteration_duration.record(d.as_micros() as u64);
                }
                None => s.interrupted += 1,
            }
        }
    }

    /// Open model: an iteration could not start (pool exhausted).
    pub(super) fn dropped(&self, scenario: usize, at: Instant) {
        self.dropped_n(scenario, 1, at);
    }

    /// Open model: `n` iterations could not start at all (the run's end came first).
    pub(super) fn dropped_n(&self, scenario: usize, n: u64, at: Instant) {
        self.roll_to(at);
        self.metrics.borrow_mut().scenarios[scenario].dropped += n;
    }

    /// Open model: an arrival started an iteration (`at`: when it was due).
    pub(super) fn started(&self, scenario: usize, at: Instant) {
        self.roll_to(Instant::now().max(at));
        self.metrics.borrow_mut().scenarios[scenario].started += 1;
    }

    /// Open model: an iteration started late because the generator was behind.
    pub(super) fn late(&self, scenario: usize, at: Instant) {
        self.roll_to(at);
        self.metrics.borrow_mut().scenarios[scenario].late += 1;
    }

    /// Once-a-second flush, called by the worker's clock task.
    pub(super) fn tick(&self) {
        self.roll_to(Instant::now());
    }

    /// Final flush and goodbye.
    pub(super) fn finish(&self) {
        let mut m = self.metrics.borrow_mut();
        self.send_current(&mut m);
        let _ = self.tx.send(WorkerMessage::Done { worker: self.id });
    }

    /// Sleep until `at`, returning false early if a graceful stop is requested.
    pub(super) async fn sleep_until(&self, at: Instant) -> bool {
        if self.stopping.get() {
            return false;
        }
        tokio::select! {
            _ = tokio::time::sleep_until(at.into()) => !self.stopping.get(),
            _ = self.stop_notify.notified() => false,
        }
    }

    /// Apply the shared stop state to this worker.
    pub(super) fn observe_stop(&self, state: u8) {
        if state >= STOPPING && !self.stopping.get() {
            self.stopping.set(true);
            self.stop_seen_at.set(Some(Instant::now()));
            self.stop_notify.notify_waiters();
        }
        if state >= ABORT && !self.aborted.get() {
            self.aborted.set(true);
            self.abort_notify.notify_waiters();
        }
    }

    /// Wait until work must be cut (abort) or the plan's clock changed (a hold or
    /// a skip moved the VU's deadlines; [`WorkerCtx::aborted`] tells which). Pin
    /// one per VU and reuse it across iterations: it registers with the notifier
    /// once, not once per iteration, and one registration serves both.
    pub(super) fn interrupted(&self) -> impl std::future::Future<Output = ()> + '_ {
        let notified = self.abort_notify.notified();
        async move {
            if self.aborted.get() {
                return;
            }
            notified.await
        }
    }

    /// Before the worker's VUs start: the script's `setup()` data, and the stop
    /// state as it is now (a run stopped before it began, because a script's
    /// `setup()` threw, starts no VU).
    pub(super) fn prime(&self, script_data: Option<Arc<str>>, state: &AtomicU8) {
        *self.script_data.borrow_mut() = script_data;
        self.poll_state(state);
    }

    /// Whether the shared state says to stop (polled by the clock task).
    pub(super) fn poll_state(&self, state: &AtomicU8) {
        let mut state = state.load(Ordering::Relaxed);
        // A script's `exec.test.abort()` on any worker stops every worker.
        if state == RUNNING
            && self.plan.script.is_some()
            && self.plan.script_state.aborted().is_some()
        {
            state = STOPPING;
        }
        self.observe_stop(state);
    }
}

fn fresh_series(plan: &RunPlan) -> Vec<SeriesStats> {
    plan.series
        .iter()
        .map(|k| SeriesStats::new(k.clone()))
        .collect()
}

fn fresh_scenarios(plan: &RunPlan) -> Vec<ScenarioStats> {
    plan.scenarios
        .iter()
        .map(|s| ScenarioStats::new(s.name.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// A request ends in the second its end instant falls in, `[t0 + s, t0 + s + 1)`:
    /// the worker sends a second when the first request of a later one ends, and
    /// the boundary itself (exactly `t0 + 1 s`) belongs to the later second. Planted
    /// ends on both sides of each boundary, counted per second as sent.
    #[test]
    fn requests_are_counted_in_the_second_their_end_falls_in() {
        let src = "target: http://127.0.0.1:9\nscenarios:\n  s:\n    executor: per-vu-iterations\n    vus: 1\n    iterations: 1\n    flow:\n      - request: /\n";
        let cfg = pado_scenario::parse_str(src, "t.yaml").unwrap();
        let plan = Arc::new(crate::plan::compile(&cfg, Path::new(".")).unwrap());
        let (tx, rx) = crossbeam_channel::unbounded();
        let outlets = Outlets {
            tx,
            observer: None,
            raw: None,
        };
        let t0 = Instant::now();
        let ctx = WorkerCtx::new(0, plan, t0, outlets, Vec::new());
        let ms = |n: u64| t0 + Duration::from_millis(n);
        // Second 0: 3; second 1: 2 (its first at exactly 1 s); second 3: 1 (none in 2).
        // A late report of an earlier end stays in the current second.
        for end in [
            ms(0),
            ms(500),
            ms(999),
            ms(1000),
            ms(1999),
            ms(3000),
            ms(2500),
        ] {
            ctx.record(0, &RequestSample::default(), end);
        }
        ctx.finish();
        let per_second: Vec<(u32, u64)> = rx
            .try_iter()
            .filter_map(|m| match m {
                WorkerMessage::Interval(i) => {
                    Some((i.second, i.series.iter().map(|s| s.requests).sum()))
                }
                _ => None,
            })
            .collect();
        assert_eq!(per_second, [(0, 3), (1, 2), (3, 2)]);
    }
}
